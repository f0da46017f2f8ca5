# fish completion for scar-ckpt(1)

set -l cmds apply convert export import info ls save verify help
complete -c scar-ckpt -f
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a apply -d 'apply partial checkpoints onto a full base'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a convert -d 'rewrite compression, precision or shards'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a export -d 'write a tensor as raw, .npy, JSON or safetensors'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a import -d 'make a checkpoint of raw or .npy arrays'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a info -d 'show metadata, tensors and section sizes'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a ls -d 'list the checkpoints of a directory'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a verify -d 'check structure and every checksum'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a help -d 'show the help of a command'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -l help -d 'show help and exit'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -l version -d 'show the version and exit'
complete -c scar-ckpt -n "__fish_seen_subcommand_from help" -a "$cmds"

complete -c scar-ckpt -n "__fish_seen_subcommand_from $cmds" -l help -d 'show help and exit'
complete -c scar-ckpt -n "__fish_seen_subcommand_from apply convert import" -l no-sync -d 'do not fsync the output'
complete -c scar-ckpt -n "__fish_seen_subcommand_from apply export import" -s o -l output -r -F -d 'output file'
complete -c scar-ckpt -n "__fish_seen_subcommand_from apply convert export import info verify" -F

complete -c scar-ckpt -n "__fish_seen_subcommand_from convert" -l compress -d 'LZ4-compress the sections'
complete -c scar-ckpt -n "__fish_seen_subcommand_from convert" -l no-compress -d 'store sections raw'
complete -c scar-ckpt -n "__fish_seen_subcommand_from convert" -l level -x -a '0 1 2 3 4 5 6 7 8 9 10 11 12' -d 'LZ4 level'
complete -c scar-ckpt -n "__fish_seen_subcommand_from convert" -l dtype -x -a 'f32 f64 f16 bf16' -d 'float type'
complete -c scar-ckpt -n "__fish_seen_subcommand_from convert import" -l shards -x -d 'shard count'
complete -c scar-ckpt -n "__fish_seen_subcommand_from apply convert import save" -l threads -x -d 'compression threads'
complete -c scar-ckpt -n "__fish_seen_subcommand_from apply convert import save" -l shuffle -x -a 'off on auto' -d 'byte-shuffle sections before LZ4'

complete -c scar-ckpt -n "__fish_seen_subcommand_from export" -l format -x -a 'raw npy json safetensors' -d 'output format'
complete -c scar-ckpt -n "__fish_seen_subcommand_from export" -l rows -x -d 'only rows A..B-1 (A:B)'
complete -c scar-ckpt -n "__fish_seen_subcommand_from export" -l shard -x -d 'only the rows of shard N'
complete -c scar-ckpt -n "__fish_seen_subcommand_from export" -l tensor -x -d 'tensor name'

complete -c scar-ckpt -n "__fish_seen_subcommand_from import" -l dtype -x -a 'f32 f64 f16 bf16 i32 u32 i64 u64 u8' -d 'element type'
complete -c scar-ckpt -n "__fish_seen_subcommand_from import" -l iteration -x -d 'iteration'
complete -c scar-ckpt -n "__fish_seen_subcommand_from import" -l model -x -d 'model name'
complete -c scar-ckpt -n "__fish_seen_subcommand_from import" -l name -x -d 'tensor name'
complete -c scar-ckpt -n "__fish_seen_subcommand_from import" -l role -x -a 'param state' -d 'tensor role'
complete -c scar-ckpt -n "__fish_seen_subcommand_from import" -l shape -x -d 'shape of raw input'

complete -c scar-ckpt -n "__fish_seen_subcommand_from info ls" -l json -d 'print JSON'
complete -c scar-ckpt -n "__fish_seen_subcommand_from ls" -a '(__fish_complete_directories)'
complete -c scar-ckpt -n "__fish_seen_subcommand_from verify" -s q -l quiet -d 'say nothing about intact files'
complete -c scar-ckpt -n "__fish_seen_subcommand_from info verify" -l threads -x -d 'threads to check sections on'
complete -c scar-ckpt -n "not __fish_seen_subcommand_from $cmds" -a save -d 'checkpoint a snapshot by a policy'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l policy -x -a 'full round-robin random priority' -d 'checkpoint policy'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l fraction -x -d 'fraction of rows'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l interval -x -d 'full cycle every C iterations'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l iteration -x -d 'the snapshot iteration'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l seed -x -d 'random policy seed'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l shards -x -d 'shard count of a snapshot'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l stream -d 'snapshots one after another from a pipe'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l force -d 'go on under another policy'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -l no-sync -d 'do not fsync'
complete -c scar-ckpt -n "__fish_seen_subcommand_from save" -F
