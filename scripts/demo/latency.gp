# scripts/demo/latency.gp: the demo's latency plot (called by report.py).
# Variables given with -e: datafile (columns: admission second since the first one,
# accept-to-DB lag in ms, voucher index 0 = hot, outcome 1 CREATED / 2 FAILED),
# outfile (PNG), title_text.
set terminal pngcairo size 1100,800 noenhanced font ",10"
set output outfile
set multiplot layout 2,1 title title_text
set grid
set key top left opaque box
set xlabel "admitted at the front (traceId timestamp, s since the first admission)"
set ylabel "admitted -> outcome row in DB (ms, one host clock)"
plot datafile using 1:($3 == 0 && $4 == 1 ? $2 : 1/0) with points pt 7 ps 0.4 lc rgb "#c0392b" title "hot voucher, CREATED", \
     datafile using 1:($3 != 0 && $4 == 1 ? $2 : 1/0) with points pt 7 ps 0.4 lc rgb "#2471a3" title "ordinary vouchers, CREATED", \
     datafile using 1:($4 == 2 ? $2 : 1/0) with points pt 2 ps 0.8 lc rgb "#000000" title "FAILED (outcome row, then rollback)"
stats datafile using 2 nooutput
binwidth = (STATS_max - STATS_min) / 40.0
if (binwidth <= 0) binwidth = 1
bin(x) = binwidth * floor(x / binwidth) + binwidth / 2.0
set xlabel "accept -> outcome row in DB (ms)"
set ylabel "accepted purchases"
set style fill solid 0.6 border -1
set boxwidth binwidth * 0.9
plot datafile using (bin($2)):(1.0) smooth frequency with boxes lc rgb "#7d3c98" title "lag histogram"
unset multiplot
