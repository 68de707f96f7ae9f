# scripts/demo/queue.gp: the --queue demo's plot (called by queue_report.py). Variables
# given with -e: datafile (rows: seconds since begin, members waiting for their turn,
# admitted so far, told sold out so far), outfile (PNG), title_text.
set terminal pngcairo size 1100,500 noenhanced font ",10"
set output outfile
set title title_text
set grid
set key top right opaque box
set xlabel "seconds since begin (the crowd's clock)"
set ylabel "members"
set yrange [0:*]
set autoscale xfix
plot datafile using 1:2 with lines lw 2 title "waiting (joined, not yet admitted or told sold out)", \
     datafile using 1:3 with lines lw 2 title "admitted so far", \
     datafile using 1:4 with lines lw 2 title "told sold out so far"
