# scripts/demo/timeline.gp: the demo's timeline plot (called by report.py via figures.py).
# Variables given with -e: datafile (a header row of quoted column names, then rows:
# seconds since the sale's first request, answers/s for each of ncodes answer codes,
# orders in the DB by the end of the bin), outfile (PNG), ncodes, binw (the bin in
# seconds), title_text. Answers are steps over their bin; orders are drawn at bin ends.
set terminal pngcairo size 1100,500 noenhanced font ",10"
set output outfile
set title title_text
set grid
set key top right opaque box
set xlabel "seconds since the sale's first request (answers: when wrk got them; orders: create_time; one host clock)"
set ylabel "answers per second (100 ms bins)"
set y2label "orders in the DB"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set autoscale xfix
plot for [i=1:ncodes] datafile using 1:(column(i + 1)) with steps lw 1.5 title columnheader(i + 1), \
     datafile using ($1 + binw):(column(ncodes + 2)) axes x1y2 with lines lw 2.5 lc rgb "#000000" \
         title columnheader(ncodes + 2)
