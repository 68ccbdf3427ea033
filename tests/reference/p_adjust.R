# Reference values for p-value adjustment: R's p.adjust, every method, with and without
# missing values, ties, and a vector of 1,000 p-values.
# Run from tests/reference/:  Rscript p_adjust.R   (writes p_adjust.json)
# Used by tests/inference/test_p_adjust.py.
suppressPackageStartupMessages(library(jsonlite))
RNGkind("Mersenne-Twister", "Inversion", "Rejection")
set.seed(20261122)

methods <- c("bonferroni", "holm", "hochberg", "hommel", "BH", "BY", "none")
vectors <- list(
  small = c(0.01, 0.04, 0.03, 0.2),
  with_nan = c(0.01, NA, 0.04, 0.03, NA, 0.2, 0.5, 0.001),
  ties = c(0.02, 0.02, 0.02, 0.5, 0.5, 0.01, 0.04),
  two = c(0.03, 0.04),
  one = c(0.03),
  uniform = round(runif(60), 8),
  mixture = round(c(rbeta(700, 0.3, 4), runif(300)), 10)
)
cases <- lapply(vectors, function(p) {
  adj <- lapply(methods, function(m) p.adjust(p, m))
  names(adj) <- methods
  list(p = p, adjusted = adj)
})
out <- list(cases = cases, R_version = R.version.string)
writeLines(toJSON(out, digits = I(17), auto_unbox = FALSE, na = "null", pretty = FALSE),
           "p_adjust.json")
