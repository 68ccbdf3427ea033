# Reference values for irm.meta_analysis: metafor's rma(yi, vi, method = "FE" | "DL" | "REML")
# (test = "z") and predict() on (a) metafor's dat.bcg (log risk ratios from escalc("RR")),
# (b) one system difference per public TREC collection (meta_analysis_trec.csv, written by
# make_meta_analysis_data.py), (c) small cases: tau^2 truncated at 0, k = 2, k = 1 (FE), a 90%
# level.
# Run from tests/reference/:  Rscript meta_analysis.R   (writes meta_analysis.json)
# Used by tests/inference/test_meta_analysis.py.
suppressPackageStartupMessages({library(metafor); library(jsonlite)})

bcg <- escalc(measure = "RR", ai = tpos, bi = tneg, ci = cpos, di = cneg, data = dat.bcg)
trec <- read.csv("meta_analysis_trec.csv", stringsAsFactors = FALSE)
data <- list(
  bcg = list(yi = as.numeric(bcg$yi), vi = as.numeric(bcg$vi),
             labels = paste(dat.bcg$author, dat.bcg$year)),
  trec = list(yi = trec$estimate, vi = trec$variance, labels = trec$collection),
  homogeneous = list(yi = c(0.10, 0.12, 0.11, 0.09, 0.105),
                     vi = c(0.01, 0.02, 0.015, 0.01, 0.012), labels = letters[1:5]),
  two = list(yi = c(0.3, -0.1), vi = c(0.01, 0.02), labels = c("a", "b")),
  one = list(yi = c(0.25), vi = c(0.04), labels = c("a"))
)
fit <- function(d, method, level) {
  res <- rma(yi = d$yi, vi = d$vi, method = method, level = 100 * level, test = "z")
  pr <- predict(res, level = 100 * level)
  list(estimate = as.numeric(res$beta), se = res$se, z = res$zval, p = res$pval,
       ci_lower = res$ci.lb, ci_upper = res$ci.ub,
       pi_lower = if (is.null(pr$pi.lb)) NA_real_ else pr$pi.lb,  # no PI from an FE model
       pi_upper = if (is.null(pr$pi.ub)) NA_real_ else pr$pi.ub,
       tau2 = res$tau2, se_tau2 = if (is.null(res$se.tau2)) NA_real_ else res$se.tau2,
       Q = res$QE, Q_p = res$QEp, I2 = res$I2, H2 = res$H2,
       weight = as.numeric(weights(res)))
}
runs <- list(
  list(data = "bcg", methods = c("FE", "DL", "REML"), level = 0.95),
  list(data = "bcg", methods = c("FE", "DL", "REML"), level = 0.90),
  list(data = "trec", methods = c("FE", "DL", "REML"), level = 0.95),
  list(data = "homogeneous", methods = c("FE", "DL", "REML"), level = 0.95),
  list(data = "two", methods = c("FE", "DL", "REML"), level = 0.95),
  list(data = "one", methods = c("FE"), level = 0.95)
)
cases <- list()
for (r in runs) for (m in r$methods) {
  cases[[length(cases) + 1]] <- c(list(data = r$data, method = m, level = r$level),
                                  fit(data[[r$data]], m, r$level))
}
out <- list(data = data, cases = cases, R_version = R.version.string,
            metafor_version = as.character(packageVersion("metafor")))
writeLines(toJSON(out, digits = I(17), auto_unbox = TRUE, na = "null", pretty = FALSE),
           "meta_analysis.json")
