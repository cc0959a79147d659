// RUN: forge compile gpt2 --small --seq-len 8 --quiet --plot-memory %t.png 2>&1 | filecheck %s
// RUN: python -c "import sys, PIL.Image as I; im = I.open(sys.argv[1]); print(im.format, im.size[0] >= 800, im.size[1] >= 300)" %t.png | filecheck %s --check-prefix=PNG

// `forge compile MODEL --plot-memory FILE` draws the buffer-level memory plan (buffers x
// schedule steps, one bar per planned value, device segments shaded) and says what it drew;
// the figures agree with the report's plan line (116,800 B = 114.1 KiB, 18,432 B = 18.0 KiB: the offset
// plan reaches the lower bound; its 8 buffers are views of one arena, some overlapping in address).

// CHECK: virtual registers 73 -> physical buffers 8; peak bytes 116,800 naive -> 18,432 planned (lower bound 18,432, planned 1.000x it)
// CHECK: wrote memory plot {{.*}}.png: 45 values in 8 buffers over 45 steps, peak 18.0 KiB planned (114.1 KiB naive)

// PNG: PNG True True
