# fish completion for scar-plot(1)

complete -c scar-plot -l c -x -d 'contraction rate of the envelope (0 < c < 1)'
complete -c scar-plot -l D -x -d 'distance to the optimum at the first record'
complete -c scar-plot -s h -l help -d 'show help and exit'
complete -c scar-plot -l linear -d 'linear y axis'
complete -c scar-plot -l log -d 'logarithmic y axis'
complete -c scar-plot -s o -l output -r -F -d 'write the PNG to a file'
complete -c scar-plot -l size -x -a '800x500 1200x600 1600x900' -d 'image size in pixels (WxH)'
complete -c scar-plot -l title -x -d 'title of the plot'
complete -c scar-plot -l version -d 'show the version and exit'
complete -c scar-plot -l y -x -a 'objective dist' -d 'what to draw'
