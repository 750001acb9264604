#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Draw bench-locks results: read cost, reader throughput, writer latency.

Usage: plot.py SAMPLES.csv OUT.png

SAMPLES.csv is what `bench-locks --csv` writes.  Figures are medians over
repetitions of each repetition's median, as in the driver's table.  Needs
gnuplot (Debian: gnuplot-nox).
"""
import collections
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

LABELS = {
    'floor': 'floor',
    'floor-call': 'floor, calls',
    'mutex': '1 mutex',
    'percpu2013': '2 percpu-2013',
    'cpuhp': '3 cpuhp .so',
    'cpuhp-static': '3 static',
    'cpuhp-inline': '3 inline hdr',
    'cpuhp-handle': '3 handle',
    'rseq-rwsem': 'rseq per-CPU*',
    'rseq-thread': 'rseq per-thread*',
    'rseq-thread-call': 'rseq p-t, calls*',
    'rwlock': 'rwlock',
    'rwlock-wr': 'rwlock wr-pref',
    'rseq-counter': 'ctr rseq',
    'atomic-counter': 'ctr atomic',
}

PANELS = [
    ('Read lock+unlock cost (ns per pair, log scale, lower is better)', True,
     [('read_1t', '1 thread'), ('read_2t', '2 threads, per thread'),
      ('read_2t_1core', '2 threads on 1 core')]),
    ('Reader throughput, 2 reader threads (Mpairs/s, higher is better)', False,
     [('tput_no_writer', 'no writer'), ('tput_writer_100ms', 'writer every 100 ms'),
      ('tput_writer_10ms', 'every 10 ms'), ('tput_writer_1ms', 'every 1 ms'),
      ('tput_during_burst', 'during a 10-writer burst')]),
    ('Writer latency (us, log scale, lower is better)', True,
     [('writer_idle', '1 writer, readers idle'), ('burst10', 'burst of 10, readers idle'),
      ('writer_1reader', '1 writer, 1 busy reader'),
      ('burst10_1reader', 'burst of 10, 1 busy reader'),
      ('burst10_readers', 'burst of 10, 2 busy readers')]),
]


def medians(path):
    per_rep = collections.defaultdict(list)
    order = []
    with open(path, newline='') as f:
        for row in csv.DictReader(f):
            if row['design'] not in order:
                order.append(row['design'])
            per_rep[(row['design'], row['metric'], row['rep'])].append(float(row['value']))
    by_metric = collections.defaultdict(list)
    for (design, metric, _), values in per_rep.items():
        by_metric[(design, metric)].append(statistics.median(values))
    return order, {k: statistics.median(v) for k, v in by_metric.items()}


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ('-h', '--help'):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    src, out = sys.argv[1:]
    gnuplot = shutil.which('gnuplot')
    if not gnuplot:
        sys.exit('plot.py: gnuplot not found; install it: apt-get install gnuplot-nox')
    order, med = medians(src)
    with tempfile.TemporaryDirectory() as tmp:
        script = [
            f"set terminal pngcairo size 1400,1500 font 'DejaVu Sans,11'",
            f"set output '{out}'",
            "set label 1 '* prototypes in tests/bench' at screen 0.01, screen 0.01",
            'set multiplot layout 3,1',
            'set style data histograms',
            'set style histogram clustered gap 1',
            'set style fill solid 0.85 border -1',
            'set boxwidth 0.9',
            'set grid ytics',
            'set key outside right top vertical',
            'set xtics rotate by -20 scale 0',
            'set yrange [0:*]',
        ]
        for i, (title, log, cols) in enumerate(PANELS):
            # Columns nobody measured (older CSV, --read-only) would break the histogram.
            cols = [(m, h) for m, h in cols if any((d, m) in med for d in order)]
            if not cols:
                continue
            designs = [d for d in order if any((d, m) in med for m, _ in cols)]
            data = os.path.join(tmp, f'panel{i}.dat')
            with open(data, 'w') as f:
                for d in designs:
                    vals = [med.get((d, m)) for m, _ in cols]
                    cells = ['NaN' if v is None else f'{v:.6g}' for v in vals]
                    f.write('"{}" {}\n'.format(LABELS.get(d, d), ' '.join(cells)))
            script.append(f"set title '{title}'")
            if log:
                script += ['set logscale y', 'set yrange [*:*]']
            else:
                script += ['unset logscale y', 'set yrange [0:*]']
            plots = []
            for k, (_, head) in enumerate(cols):
                src_ref = f"'{data}'" if k == 0 else "''"
                xtic = ':xtic(1)' if k == 0 else ''
                plots.append(f"{src_ref} using {k + 2}{xtic} title '{head}'")
            script.append('plot ' + ', '.join(plots))
        script.append('unset multiplot')
        subprocess.run([gnuplot], input='\n'.join(script) + '\n', text=True, check=True)


if __name__ == '__main__':
    main()
