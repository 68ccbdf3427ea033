# Reference values of the studentized range distribution from R's ptukey / qtukey.
# Run from tests/reference/:  Rscript ptukey.R   (writes ptukey.json)
# Used by tests/inference/test_studentized.py.
suppressPackageStartupMessages(library(jsonlite))
ks  <- c(2, 3, 4, 5, 10, 20, 50, 100, 129, 150)
dfs <- c(5, 10, 20, 50, 100, 800, 1000, 5000, 6000, 6272, 25000, 25001, 1e5)
qs  <- c(0.1, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 10, 12, 15, 20)
grid <- expand.grid(q = qs, k = ks, df = dfs)
grid$lower <- ptukey(grid$q, grid$k, grid$df)
grid$upper <- ptukey(grid$q, grid$k, grid$df, lower.tail = FALSE)
qgrid <- expand.grid(p = c(0.9, 0.95, 0.99), k = ks, df = dfs)
qgrid$q <- qtukey(qgrid$p, qgrid$k, qgrid$df)
out <- list(
  R_version = R.version.string,
  note = "ptukey(q, k, df) lower and upper tail; qtukey(p, k, df) (nranges = 1)",
  ptukey = as.list(grid),
  qtukey = as.list(qgrid)
)
write_json(out, "ptukey.json", digits = NA, auto_unbox = TRUE)
