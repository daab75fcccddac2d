set terminal pngcairo size 900,560 noenhanced
set output 'database-qd1.png'
set title 'Database 8 KiB random, QD 1: IOPS against write share %'
set xlabel 'writes, %'
set ylabel 'IOPS'
set key outside right
set grid
set datafile missing '?'
set yrange [0:*]
plot for [i=2:9] 'database-qd1.dat' using 1:i with linespoints lw 2 title columnheader(i)
