# fish completion for scar-inject(1)

# --reset: a kind, or from= and a file.
function __scar_inject_reset
    set -l tok (commandline -ct)
    if string match -q -- 'from=*' $tok
        for f in (__fish_complete_path (string sub -s 6 -- $tok))
            echo from=$f
        end
    else
        printf '%s\n' zero random init from=
    end
end

complete -c scar-inject -l bitflip-count -x -d 'flip exactly N distinct bits'
complete -c scar-inject -l bitflip-rate -x -d 'flip each eligible bit with probability P'
complete -c scar-inject -l bits -x -a 'any sign exponent mantissa' -d 'which bits flip'
complete -c scar-inject -s h -l help -d 'show help and exit'
complete -c scar-inject -l lose-count -x -d 'lose N shards chosen by the seed'
complete -c scar-inject -l lose-fraction -x -d 'lose a fraction of the shards'
complete -c scar-inject -l lose-shards -x -d 'lose these shards (0,3,5-7)'
complete -c scar-inject -l mix -x -d 'weight of the older checkpoint (0..1)'
complete -c scar-inject -l noise-l2 -x -d 'Gaussian noise of exactly this L2 norm'
complete -c scar-inject -l noise-rel -x -d 'noise norm relative to the current norm'
complete -c scar-inject -l quantize -x -a 'f16 bf16 int8' -d 'round through a smaller format'
complete -c scar-inject -s q -l quiet -d 'no report on standard error'
complete -c scar-inject -l report -r -F -d 'write the JSON report to FILE (- for stdout)'
complete -c scar-inject -l reset -x -a '(__scar_inject_reset)' -d 'what lost rows become'
complete -c scar-inject -l rows -x -d 'only rows A..B-1 (A:B)'
complete -c scar-inject -l seed -x -d 'seed of every random choice'
complete -c scar-inject -l shard -x -d 'only the rows of shard N'
complete -c scar-inject -l shards -x -d 'shard count of a snapshot'
complete -c scar-inject -l shuffle -x -a 'off on auto' -d 'byte-shuffle the output checkpoint before LZ4'
complete -c scar-inject -l stale -r -F -d 'mix with this older checkpoint'
complete -c scar-inject -l tensor -x -d 'only this tensor'
complete -c scar-inject -s V -l version -d 'show the version and exit'
