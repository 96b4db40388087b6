# bench/plot.gp — renders bench/results/latest.png for bench/run.sh: left, every measure's
# ratio sandlot/peer as a bar with its goal; right, the density curve against N (log x).
# Variables (gnuplot -e, set by bench/plot.sh): ratios, dsl, dcr (data files), out, title,
# has_ratios, has_density.

set terminal pngcairo size 1600,700 font "DejaVu Sans,10" noenhanced
set output out
set multiplot layout 1,2 title title font ",13"

# ---- ratios: horizontal bars, < 1 means sandlot costs less than the peer --------------------
set title "sandlot ÷ peer (median time; for runs/s: peer rate ÷ sandlot rate) — lower is better"
set style fill solid 0.55 border -1
set xlabel "ratio"
set xrange [0:*]
set yrange [*:*] reverse
set offsets 0, graph 0.08, 0.6, 0.6
set grid xtics
set key outside bottom center horizontal
set bmargin 8
set arrow 1 from 1, graph 0 to 1, graph 1 nohead dt 2 lc rgb "#444444"
set lmargin 48
if (has_ratios) {
	plot ratios using ($2 / 2):0:($2 / 2):(0.35):4:ytic(1) with boxxyerror lc rgb variable \
		title "sandlot ÷ peer (green: goal met, red: missed)", \
	     '' using 2:0:(sprintf("%.2f", $2)) with labels left offset 0.6, 0 notitle, \
	     '' using 3:0 with points pt 9 ps 1.8 lc rgb "#d62728" title "goal (at most)"
} else {
	unset ytics
	set label 1 "no ratio measures in this run" at graph 0.5, 0.5 center
	plot 1 notitle lc rgb "white"
	unset label 1
	set ytics
}
unset arrow 1
unset offsets
set lmargin

# ---- density: host memory per idle sandbox (left axis) and create time (right), log N ---------
set title "N idle sandboxes: host memory each (left axis) and time per create (dashed, right axis)"
set logscale x
set xrange [*:*] noreverse
set yrange [0:*] noreverse
set xlabel "N (idle sandboxes at once)"
set ylabel "KiB of host memory per sandbox"
set grid xtics ytics
set key outside bottom center horizontal maxrows 3
set bmargin 8
set arrow 2 from graph 0, first 512 to graph 1, first 512 nohead dt 3 lc rgb "#d62728"
set label 2 "goal 512 KiB" at graph 0.02, first 512 offset 0, 0.7 tc rgb "#d62728"
if (has_density) {
	set y2range [0:*]
	set y2label "ms per create (median)"
	set ytics nomirror
	set y2tics
	# Solid: slab + page tables + kernel stack + percpu + PSS (steady); points: the drop
	# of MemAvailable (what the goal counts; noisy wherever N is small).
	plot dsl using 1:4 with linespoints lw 2 pt 7 lc rgb "#3572b0" title "sandlot KiB (accounted)", \
	     dcr using 1:4 with linespoints lw 2 pt 5 lc rgb "#ff7f0e" title "crun run -d KiB (accounted)", \
	     dsl using 1:3 with points pt 6 ps 1.6 lc rgb "#3572b0" title "sandlot KiB (MemAvailable drop)", \
	     dcr using 1:3 with points pt 4 ps 1.6 lc rgb "#ff7f0e" title "crun KiB (MemAvailable drop)", \
	     dsl using 1:2 axes x1y2 with linespoints dt 2 pt 1 lc rgb "#3572b0" title "sandlot ms per create", \
	     dcr using 1:2 axes x1y2 with linespoints dt 2 pt 2 lc rgb "#ff7f0e" title "crun ms per create"
} else {
	set label 1 "no density measures in this run" at graph 0.5, 0.5 center
	unset logscale x
	plot 1 notitle lc rgb "white"
}
unset multiplot
