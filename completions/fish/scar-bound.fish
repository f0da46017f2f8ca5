# fish completion for scar-bound(1)

set -l cmds check cost evaluate fit plan help
complete -c scar-bound -f
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -a check -d 'observed cost beside the bound'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -a cost -d 'iteration cost, from any trainer'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -a evaluate -d 'the bound for c, D and perturbations'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -a fit -d 'estimate c and D from an event stream'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -a plan -d 'checkpoint interval and fraction'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -a help -d 'show the help of a command'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -l help -d 'show help and exit'
complete -c scar-bound -n "not __fish_seen_subcommand_from $cmds" -l version -d 'show the version and exit'
complete -c scar-bound -n "__fish_seen_subcommand_from help" -a "check cost evaluate fit plan"

complete -c scar-bound -n "__fish_seen_subcommand_from $cmds" -l help -d 'show help and exit'
complete -c scar-bound -n "__fish_seen_subcommand_from check cost evaluate fit plan" -l json -d 'print one JSON object'
complete -c scar-bound -n "__fish_seen_subcommand_from check cost fit" -F

complete -c scar-bound -n "__fish_seen_subcommand_from check evaluate" -l delta -x -d 'perturbation X@T'
complete -c scar-bound -n "__fish_seen_subcommand_from check evaluate" -l eps -x -d 'distance to reach'
complete -c scar-bound -n "__fish_seen_subcommand_from check fit" -l floor -x -d 'noise floor of the fit'
complete -c scar-bound -n "__fish_seen_subcommand_from check fit" -l skip -x -d 'transient steps to drop'
complete -c scar-bound -n "__fish_seen_subcommand_from check" -l metric -x -a 'objective dist_opt' -d 'what the target is measured on'
complete -c scar-bound -n "__fish_seen_subcommand_from check cost" -l target -x -d 'value to reach'
complete -c scar-bound -n "__fish_seen_subcommand_from check cost" -l window -x -d 'smoothing window'

complete -c scar-bound -n "__fish_seen_subcommand_from evaluate plan" -l c -x -d 'contraction rate'
complete -c scar-bound -n "__fish_seen_subcommand_from evaluate plan" -l D -x -d 'distance to the optimum'
complete -c scar-bound -n "__fish_seen_subcommand_from evaluate" -l T -x -d 'clock of the perturbations'

complete -c scar-bound -n "__fish_seen_subcommand_from plan" -l budget -x -d 'rows fraction per iteration'
complete -c scar-bound -n "__fish_seen_subcommand_from plan" -l failure-rate -x -d 'failures per iteration'
complete -c scar-bound -n "__fish_seen_subcommand_from plan" -l iters -x -d 'average over clocks 1..N'
complete -c scar-bound -n "__fish_seen_subcommand_from plan" -l lost-fraction -x -d 'fraction of rows lost'
complete -c scar-bound -n "__fish_seen_subcommand_from plan" -l step -x -d 'first step norm'
