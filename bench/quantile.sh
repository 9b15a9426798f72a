# Sourced by the bench scripts: weir's one definition of a quantile
# (nearest-rank, as weir_stats::quantile), for numbers read one a line.
#   quantile Q < numbers   the sample of rank ceil(Q * n), at least 1
#   median < numbers       quantile 0.5 (the lower middle for even n)
quantile() {
  sort -g | awk -v q="$1" '{ v[NR] = $1 }
    END { if (NR == 0) exit; r = q * NR; i = int(r); if (i < r) i++; if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
median() { quantile 0.5; }
