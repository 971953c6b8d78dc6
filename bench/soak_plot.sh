#!/usr/bin/env bash
# Draws a soak CSV (bench/soak.sh) as one SVG: RSS, threads, descriptors and actors against time,
# the warm-up shaded. Needs gnuplot (Debian gnuplot-nox).
#
#   bench/soak_plot.sh CSV SVG [WARMUP_S]      e.g. bench/soak_plot.sh build/soak/soak.csv docs/soak.svg 300
set -euo pipefail
csv=$1
svg=$2
warmup=${3:-0}
command -v gnuplot >/dev/null || { echo "soak_plot: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
rows=$(($(wc -l <"$csv") - 1))
end=$(tail -n 1 "$csv" | cut -d, -f1)
gnuplot <<GP
set terminal svg size 1000,700 dynamic font "sans,11" background rgb "white"
set output "$svg"
set datafile separator ","
set key top left
set grid
set xlabel "minutes"
set xrange [0:$end/60.0]
set style rect fc rgb "#eeeeee" fs solid 1.0 noborder
set obj 1 rect from 0, graph 0 to $warmup/60.0, graph 1 back
set multiplot layout 2,2 title "gather serve, soak: $rows samples every 10 s (warm-up shaded)"
set title "resident memory (MB)"
set yrange [0:*]
plot "$csv" every ::1 using (\$1/60.0):(\$2/1024.0) with lines lw 2 title "RSS"
set title "threads"
set yrange [0:*]
plot "$csv" every ::1 using (\$1/60.0):3 with lines lw 2 title "threads"
set title "open file descriptors"
set yrange [0:*]
plot "$csv" every ::1 using (\$1/60.0):4 with lines lw 2 title "fds", \
     "$csv" every ::1 using (\$1/60.0):6 with lines lw 1 title "client connections (/debug/actors)"
set title "actors (/debug/actors)"
set yrange [0:*]
plot "$csv" every ::1 using (\$1/60.0):5 with lines lw 2 title "actors running", \
     "$csv" every ::1 using (\$1/60.0):7 with lines lw 1 title "coordinators"
unset multiplot
GP
echo "soak_plot: $svg ($rows samples)"
