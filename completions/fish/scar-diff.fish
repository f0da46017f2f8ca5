# fish completion for scar-diff(1)

complete -c scar-diff -l all -d 'compare state tensors too'
complete -c scar-diff -s h -l help -d 'show help and exit'
complete -c scar-diff -l json -d 'JSON output even on a terminal'
complete -c scar-diff -l per -x -a 'row tensor' -d 'one JSON line per row, or the summary only'
complete -c scar-diff -s q -l quiet -d 'print nothing, exit status only'
complete -c scar-diff -l strict -d 'rows or tensors in one side only count as differences'
complete -c scar-diff -l tensor -x -d 'compare only this tensor'
complete -c scar-diff -l text -d 'readable text output'
complete -c scar-diff -l tolerance -x -d 'equal when max |A - B| is at most X'
complete -c scar-diff -l top -x -d 'report the K rows that changed most'
complete -c scar-diff -s V -l version -d 'show the version and exit'
