# Reference values for Tukey HSD on the error term of aov(score ~ topic + system).
# Run from tests/reference/:  Rscript tukey.R   (writes tukey.json)
# Used by tests/inference/test_tukey.py.
suppressPackageStartupMessages(library(jsonlite))
RNGkind("Mersenne-Twister", "Inversion", "Rejection")

long_from_wide <- function(w) {
  w <- as.matrix(w)
  data.frame(
    topic = factor(rep(seq_len(nrow(w)), times = ncol(w))),
    system = factor(rep(colnames(w), each = nrow(w)), levels = colnames(w)),
    score = as.vector(w)
  )
}

tukey_case <- function(w, conf.level = 0.95) {
  d <- long_from_wide(w)
  fit <- aov(score ~ topic + system, data = d)
  hsd <- TukeyHSD(fit, "system", conf.level = conf.level)$system
  means <- tapply(d$score, d$system, mean)
  mse <- deviance(fit) / df.residual(fit)
  alpha <- 1 - conf.level
  best <- names(means)[which.max(means)]
  pb <- sapply(names(means), function(s) {
    if (s == best) return(1)
    nm <- if (paste0(s, "-", best) %in% rownames(hsd)) paste0(s, "-", best) else paste0(best, "-", s)
    hsd[nm, "p adj"]
  })
  top <- names(means)[pb >= alpha]
  top <- top[order(-means[top])]
  list(
    topics = nrow(w), systems = ncol(w), alpha = alpha,
    pair = rownames(hsd),
    diff = unname(hsd[, "diff"]), lwr = unname(hsd[, "lwr"]),
    upr = unname(hsd[, "upr"]), p_adj = unname(hsd[, "p adj"]),
    means = unname(means), levels = names(means),
    ms_error = mse, df_error = df.residual(fit),
    critical_value = qtukey(conf.level, ncol(w), df.residual(fit)),
    n_significant = sum(hsd[, "p adj"] < alpha),
    top_group = top
  )
}

set.seed(20190721)
small <- matrix(round(runif(8 * 5), 4), 8, 5, dimnames = list(NULL, paste0("s", 1:5)))
small[, 2] <- pmin(1, small[, 2] + 0.3)
medium <- matrix(round(rbeta(20 * 12, 2, 5), 4), 20, 12, dimnames = list(NULL, paste0("run", 1:12)))
medium <- sweep(medium, 2, seq(0, 0.22, length.out = 12), "+")

# a shard design (MD4: topic + system + shard + topic:system), 6 topics x 5 systems x 3 shards
shard_case <- function() {
  d <- expand.grid(shard = factor(1:3), system = factor(paste0("s", 1:5)), topic = factor(1:6))
  d <- d[, c("topic", "system", "shard")]
  te <- rnorm(6, 0, 0.15); se <- seq(0, 0.2, length.out = 5); he <- rnorm(3, 0, 0.05)
  ts <- matrix(rnorm(30, 0, 0.05), 6, 5)
  d$score <- round(0.3 + te[d$topic] + se[d$system] + he[d$shard] +
                   ts[cbind(as.integer(d$topic), as.integer(d$system))] + rnorm(nrow(d), 0, 0.05), 4)
  fit <- aov(score ~ topic + system + shard + topic:system, data = d)
  hsd <- TukeyHSD(fit, "system")$system
  means <- tapply(d$score, d$system, mean)
  list(topic = as.character(d$topic), system = as.character(d$system),
       shard = as.character(d$shard), score = d$score,
       pair = rownames(hsd), diff = unname(hsd[, "diff"]), lwr = unname(hsd[, "lwr"]),
       upr = unname(hsd[, "upr"]), p_adj = unname(hsd[, "p adj"]),
       ms_error = deviance(fit) / df.residual(fit), df_error = df.residual(fit),
       n_significant = sum(hsd[, "p adj"] < 0.05))
}
shards <- shard_case()

adhoc8 <- read.csv("../../../shared/data/ir-scores/adhoc8_ap.csv", check.names = FALSE)

out <- list(
  R_version = R.version.string,
  note = "TukeyHSD(aov(score ~ topic + system), 'system'); pair 'b-a' has diff = mean(b) - mean(a)",
  small = c(tukey_case(small), list(data = as.vector(small))),
  medium = c(tukey_case(medium), list(data = as.vector(medium))),
  medium_99 = c(tukey_case(medium, 0.99), list(data = as.vector(medium))),
  adhoc8 = tukey_case(adhoc8),
  shards_md4 = shards
)
write_json(out, "tukey.json", digits = NA, auto_unbox = TRUE)
