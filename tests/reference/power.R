# Reference values for irmodels.inference.power (paired t-test power, topic-set size).
# Run from tests/reference/:  Rscript power.R   -> power.json
# power.t.test(type = "paired", strict = TRUE): noncentral t, df = n - 1,
# ncp = sqrt(n) * delta / sd; both tails counted for the two-sided test.
library(jsonlite)

grid <- expand.grid(n = c(5, 10, 25, 50, 100), delta = c(0.02, 0.05, 0.1),
                    sd = c(0.05, 0.1, 0.2), sig = c(0.01, 0.05),
                    alt = c("two.sided", "one.sided"), stringsAsFactors = FALSE)
power_rows <- lapply(seq_len(nrow(grid)), function(i) {
  g <- grid[i, ]
  p <- power.t.test(n = g$n, delta = g$delta, sd = g$sd, sig.level = g$sig,
                    type = "paired", alternative = g$alt, strict = TRUE)$power
  list(n = g$n, delta = g$delta, sd = g$sd, alpha = g$sig, alternative = g$alt, power = p)
})

solve_grid <- expand.grid(delta = c(0.03, 0.05, 0.1), sd = c(0.1, 0.2), power = c(0.5, 0.8, 0.9),
                          sig = c(0.01, 0.05), alt = c("two.sided", "one.sided"),
                          stringsAsFactors = FALSE)
tol <- 1e-12
n_rows <- lapply(seq_len(nrow(solve_grid)), function(i) {
  g <- solve_grid[i, ]
  r <- power.t.test(delta = g$delta, sd = g$sd, power = g$power, sig.level = g$sig,
                    type = "paired", alternative = g$alt, strict = TRUE, tol = tol)
  list(delta = g$delta, sd = g$sd, power = g$power, alpha = g$sig, alternative = g$alt, n = r$n)
})

dgrid <- expand.grid(n = c(10, 25, 50, 100), sd = c(0.1, 0.2), power = c(0.5, 0.8, 0.9),
                     sig = c(0.01, 0.05), alt = c("two.sided", "one.sided"),
                     stringsAsFactors = FALSE)
delta_rows <- lapply(seq_len(nrow(dgrid)), function(i) {
  g <- dgrid[i, ]
  r <- power.t.test(n = g$n, sd = g$sd, power = g$power, sig.level = g$sig,
                    type = "paired", alternative = g$alt, strict = TRUE, tol = tol)
  list(n = g$n, sd = g$sd, power = g$power, alpha = g$sig, alternative = g$alt, delta = r$delta)
})

sgrid <- expand.grid(n = c(10, 25, 50, 100), delta = c(0.05, 0.1), power = c(0.5, 0.8, 0.9),
                     sig = c(0.01, 0.05), alt = c("two.sided", "one.sided"),
                     stringsAsFactors = FALSE)
sd_rows <- lapply(seq_len(nrow(sgrid)), function(i) {
  g <- sgrid[i, ]
  r <- power.t.test(n = g$n, delta = g$delta, power = g$power, sig.level = g$sig, sd = NULL,
                    type = "paired", alternative = g$alt, strict = TRUE, tol = tol)
  list(n = g$n, delta = g$delta, power = g$power, alpha = g$sig, alternative = g$alt, sd = r$sd)
})

# one-way ANOVA power (noncentral F), lambda = n * minD^2 / (2 sigma^2), m groups of n
agrid <- expand.grid(m = c(3, 10, 50), n = c(10, 25, 50, 100), minD = c(0.05, 0.1),
                     sigma = c(0.1, 0.2), sig = c(0.05))
anova_rows <- lapply(seq_len(nrow(agrid)), function(i) {
  g <- agrid[i, ]
  df1 <- g$m - 1; df2 <- g$m * (g$n - 1)
  lambda <- g$n * g$minD^2 / (2 * g$sigma^2)
  p <- pf(qf(1 - g$sig, df1, df2), df1, df2, ncp = lambda, lower.tail = FALSE)
  list(m = g$m, n = g$n, minD = g$minD, sigma = g$sigma, alpha = g$sig, power = p)
})

out <- list(
  R = R.version.string,
  packages = list(stats = as.character(packageVersion("stats")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  tolerance = list(power = 1e-10, n = 1e-6, delta = 1e-6, sd = 1e-6),
  power = power_rows, n = n_rows, delta = delta_rows, sd = sd_rows, anova = anova_rows
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "power.json")
