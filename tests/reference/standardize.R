# Reference values for score standardization (Webber, Moffat & Zobel 2008): per-topic mean and
# sample standard deviation (R's sd(), divisor n - 1) of the reference systems, z scores and
# their normal CDF, on the public TREC-5 ad hoc AP matrix; also the population SD (divisor n).
# Run from tests/reference/:  Rscript standardize.R   (writes standardize.json)
# Used by tests/data/test_standardize.py. The matrix is read from ../../../shared/data.
suppressPackageStartupMessages(library(jsonlite))

x <- as.matrix(read.csv("../../../shared/data/ir-scores/adhoc5_ap.csv", check.names = FALSE))
reference <- colnames(x)[1:20]           # the first 20 runs are the reference systems
r <- x[, reference]
mu <- rowMeans(r)
s <- apply(r, 1, sd)                     # sample SD, n - 1
s_pop <- s * sqrt((ncol(r) - 1) / ncol(r))
z <- (x - mu) / s
out <- list(
  R = R.version.string,
  file = "adhoc5_ap.csv",
  reference = reference,
  mu = unname(mu),
  sd = unname(s),
  sd_population = unname(s_pop),
  z = unname(lapply(seq_len(ncol(x)), function(j) unname(z[, j]))),
  normal = unname(lapply(seq_len(ncol(x)), function(j) unname(pnorm(z[, j])))),
  systems = colnames(x)
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE), "standardize.json")
