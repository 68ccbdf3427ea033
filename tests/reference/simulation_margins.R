# Reference values for the margins of irm.replicates.fit_simulator: maximum-likelihood fits by
# MASS::fitdistr (L-BFGS-B with simIReff's bounds) of
#   - beta (scores capped to [1e-6, 1 - 1e-6], shape1, shape2 >= 1),
#   - a normal truncated to [0, 1] (sigma >= 0.05),
#   - a beta-binomial on the success counts of P@10 (shapes >= 1),
# on seeded synthetic scores that the fixture stores with the fits (no shared data copied).
# Run from tests/reference/:  Rscript simulation_margins.R   (writes simulation_margins.json)
# Used by tests/replicates/test_simulation.py.
suppressPackageStartupMessages({library(MASS); library(jsonlite)})
set.seed(20181008)
n <- 50
cap <- function(x) pmin(1 - 1e-6, pmax(1e-6, x))
cases <- list(
  beta_a = rbeta(n, 2.2, 5.1),
  beta_b = rbeta(n, 1.3, 1.8),
  beta_zeros = c(rep(0, 4), rbeta(n - 4, 0.8, 4)),   # on the bound shape1 = 1
  tn_a = pmin(1, pmax(0, rnorm(n, 0.35, 0.2))),
  tn_b = pmin(1, pmax(0, rnorm(n, 0.7, 0.3)))
)
fit_beta <- function(x) {
  x <- cap(x)
  m <- mean(x); v <- var(x); k <- m * (1 - m) / v - 1
  f <- fitdistr(x, "beta", start = list(shape1 = max(1, m * k), shape2 = max(1, (1 - m) * k)),
                lower = c(1, 1))
  list(shape1 = unname(f$estimate[1]), shape2 = unname(f$estimate[2]), loglik = f$loglik)
}
dtn <- function(x, mu, sigma) dnorm(x, mu, sigma) / (pnorm(1, mu, sigma) - pnorm(0, mu, sigma))
fit_tn <- function(x) {
  f <- fitdistr(x, dtn, start = list(mu = mean(x), sigma = sd(x)),
                lower = c(-10, 0.05), upper = c(11, 100))
  list(mean = unname(f$estimate[1]), sd = unname(f$estimate[2]), loglik = f$loglik)
}
k <- 10
dbb <- function(x, a, b) exp(lchoose(k, x) + lbeta(x + a, k - x + b) - lbeta(a, b))
fit_bb <- function(j) {
  f <- fitdistr(j, dbb, start = list(a = 2, b = 2), lower = c(1, 1))
  list(shape1 = unname(f$estimate[1]), shape2 = unname(f$estimate[2]), loglik = f$loglik)
}
p <- rbeta(n, 2, 3)
bb <- list(bb_a = rbinom(n, k, p), bb_b = rbinom(n, k, rbeta(n, 1.5, 6)))
out <- list(
  R = R.version.string, MASS = as.character(packageVersion("MASS")),
  beta = lapply(cases[c("beta_a", "beta_b", "beta_zeros")],
                function(x) c(list(x = x), fit_beta(x))),
  truncnorm = lapply(cases[c("tn_a", "tn_b", "beta_a")], function(x) c(list(x = x), fit_tn(x))),
  betabinom = lapply(bb, function(j) c(list(j = j, k = k), fit_bb(j)))
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "simulation_margins.json")
