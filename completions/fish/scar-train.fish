# fish completion for scar-train(1)

# The workload the line names with -m/--model (default mlr); none with --resume.
function __scar_train_model
    set -l tokens (commandline -opc)
    set -l model mlr
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --resume '--resume=*'
                return 1
            case -m --model
                set -l j (math $i + 1)
                test $j -le (count $tokens); and set model $tokens[$j]
            case '--model=*'
                set model (string replace -- --model= '' $tokens[$i])
            case '-m?*'
                set model (string sub -s 3 -- $tokens[$i])
        end
    end
    echo $model
end

# --set KEY=VALUE: the model's keys with their meaning (scar-train --list-keys),
# then after KEY= its choices, or files for a key that takes a path.
function __scar_train_set
    set -l model (__scar_train_model); or return
    set -l cmd (commandline -opc)[1]
    set -l table ($cmd --list-keys $model 2>/dev/null); or return
    set -l tok (commandline -ct)
    if not string match -q -- '*=*' $tok
        string join \n -- $table | awk 'NR == 1 { p = index($0, "MEANING") }
            NR > 1 { print $1 "=\t" substr($0, p) }'
        return
    end
    set -l key (string split -m 1 = -- $tok)[1]
    set -l values (string join \n -- $table | awk -v k=$key 'NR > 1 && $1 == k { print $4 }')
    if string match -q -- '*|*' $values
        for v in (string split '|' -- $values)
            echo $key=$v
        end
    else if test "$values" = -
        for f in (__fish_complete_path (string split -m 1 = -- $tok)[2])
            echo $key=$f
        end
    end
end

function __scar_train_models
    set -l cmd (commandline -opc)[1]
    $cmd --list-models 2>/dev/null | awk '{ name = $1; $1 = ""; sub(/^ +/, ""); print name "\t" $0 }'
    or printf '%s\n' lda mf mlr ridge
end

complete -c scar-train -l checkpoint-dir -x -a '(__fish_complete_directories)' -d 'write checkpoints into this directory'
complete -c scar-train -l config -r -F -d 'model configuration as a JSON object'
complete -c scar-train -l cost -d 'measure the iteration cost against a reference run'
complete -c scar-train -l cost-cap -x -d 'give up this many iterations after --iters'
complete -c scar-train -l cost-window -x -d 'smooth the objective over W iterations'
complete -c scar-train -l data -r -F -d 'real data set'
complete -c scar-train -l events -r -F -d 'write events to this file'
complete -c scar-train -l fail-at -x -d 'fail after these iterations'
complete -c scar-train -l fail-prob -x -d 'fail after each iteration with this probability'
complete -c scar-train -l fail-seed -x -d 'seed of failures and random choices'
complete -c scar-train -l fraction -x -d 'fraction of rows per partial checkpoint'
complete -c scar-train -l heldout-every -x -d 'held-out metric every N iterations'
complete -c scar-train -s h -l help -d 'show help and exit'
complete -c scar-train -l interval -x -d 'iterations between full checkpoints'
complete -c scar-train -s n -l iters -x -d 'iterations to run'
complete -c scar-train -l json -d '--list-models and --list-keys as one JSON object'
complete -c scar-train -l list-keys -x -a '(__scar_train_models)' -d "list a workload's configuration keys and exit"
complete -c scar-train -l list-models -d 'list the workloads and exit'
complete -c scar-train -l lose-count -x -d 'a failure loses N shards'
complete -c scar-train -l lose-fraction -x -d 'a failure loses this fraction of the shards'
complete -c scar-train -l lose-shards -x -d 'a failure loses these shards (0,3,5-7)'
complete -c scar-train -s m -l model -x -a '(__scar_train_models)' -d 'the workload'
# the models, when scar-train is not there to list them: lda mf mlr ridge
complete -c scar-train -l threads -x -d 'compression threads per checkpoint'
complete -c scar-train -l async -d 'write checkpoints in the background, at most N in flight'
complete -c scar-train -l no-compress -d 'store checkpoint sections uncompressed'
complete -c scar-train -l shuffle -x -a 'off on auto' -d 'byte-shuffle checkpoint sections before LZ4'
complete -c scar-train -l no-sync -d 'do not fsync checkpoint files'
complete -c scar-train -l no-timing -d 'leave out timing fields'
complete -c scar-train -l policy -x -a 'none full round-robin random priority' -d 'checkpoint policy'
complete -c scar-train -s q -l quiet -d 'no progress bar'
complete -c scar-train -l recovery -x -a 'partial rebuild rewind auto full none' -d 'recovery strategy'
complete -c scar-train -l reference -r -F -d 'reference event stream'
complete -c scar-train -l resume -r -F -d 'continue from a checkpoint or directory'
complete -c scar-train -l save -r -F -d 'write the final state as a checkpoint'
complete -c scar-train -l seed -x -d 'seed of the model and its data'
complete -c scar-train -l set -x -a '(__scar_train_set)' -d 'set a model configuration key'
complete -c scar-train -l shards -x -d 'number of parameter shards'
complete -c scar-train -s V -l version -d 'show the version and exit'
