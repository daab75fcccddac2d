set terminal pngcairo size 900,560 noenhanced
set output 'states.png'
set title 'Sequential read 1 MiB: healthy vs degraded vs rebuilding'
set ylabel 'MiB/s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right
set grid ytics
set datafile missing '?'
set yrange [0:*]
set xtics rotate by -30
plot for [i=2:5] 'states.dat' using i:xtic(1) title columnheader(i)
