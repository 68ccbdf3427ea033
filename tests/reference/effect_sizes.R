# Reference values for irmodels' paired effect sizes (irm.effect_size, irm.pairwise's dz,
# effect_mse intervals and p_equiv), computed independently with base R.
# Run from tests/reference/:  Rscript effect_sizes.R   (writes effect_sizes.json)
# Data: effect_sizes.csv (made by effect_sizes.py): per-topic differences of six pairs of
# TREC-8 ad hoc AP runs, with V_E and its df of the two-way ANOVA over all 129 runs.
# Intervals: the noncentrality delta of a noncentral t is bounded by the roots of
# pt(t, df, delta) = p (pt decreases in delta), found with uniroot; d_z = delta / sqrt(n),
# Sakai's ES = delta / sqrt(n / 2). TOST: the larger p of two one-sided t.test calls.
suppressPackageStartupMessages(library(jsonlite))

d_all <- read.csv("effect_sizes.csv", stringsAsFactors = FALSE)

ncp_root <- function(t, df, p) {
  f <- function(delta) pt(t, df, delta) - p
  uniroot(f, lower = t - 5, upper = t + 5, extendInt = "yes", tol = 1e-14,
          maxiter = 10000)$root
}

ncp_bounds <- function(t, df, level, alternative) {
  a <- 1 - level
  if (alternative == "two.sided") {
    c(ncp_root(t, df, 1 - a / 2), ncp_root(t, df, a / 2))
  } else if (alternative == "greater") {
    c(ncp_root(t, df, 1 - a), Inf)
  } else {
    c(-Inf, ncp_root(t, df, a))
  }
}

out <- list()
for (k in sort(unique(d_all$pair))) {
  g <- d_all[d_all$pair == k, ]
  d <- g$d
  n <- length(d)
  ms <- g$ms_error[1]
  dfe <- g$df_error[1]
  tt <- t.test(d)
  dz <- mean(d) / sd(d)
  es <- mean(d) / sqrt(ms)
  rec <- list(pair = k, a = g$a[1], b = g$b[1], n = n, diff = mean(d), dz = dz,
              effect_mse = es, t = unname(tt$statistic), p = tt$p.value,
              ci = as.numeric(tt$conf.int))
  for (spec in list(list("two.sided", 0.95), list("two.sided", 0.9), list("greater", 0.95),
                    list("less", 0.95))) {
    alt <- spec[[1]]
    lev <- spec[[2]]
    key <- paste0(alt, "_", lev)
    b <- ncp_bounds(dz * sqrt(n), n - 1, lev, alt) / sqrt(n)
    e <- ncp_bounds(es * sqrt(n / 2), dfe, lev, alt) / sqrt(n / 2)
    rec[[paste0("dz_", key)]] <- b
    rec[[paste0("es_", key)]] <- e
  }
  tost <- list()
  for (m in c(0.01, 0.02, 0.05, 0.1)) {
    lo <- t.test(d, mu = -m, alternative = "greater")$p.value
    hi <- t.test(d, mu = m, alternative = "less")$p.value
    tost[[length(tost) + 1]] <- list(margin = m, p_lower = lo, p_upper = hi,
                                     p_equiv = max(lo, hi))
  }
  rec$tost <- tost
  out[[length(out) + 1]] <- rec
}

res <- list(r_version = R.version.string, jsonlite = as.character(packageVersion("jsonlite")),
            pairs = out)
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE), "effect_sizes.json")
