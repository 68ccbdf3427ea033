# Reference values for irmodels.inference.pairwise, .variability and .rank.
# Run from tests/reference/:  Rscript pairwise.R   (writes pairwise.json, or the file named
# by the first argument)
# Data: data/pairwise_small.csv (made by make_pairwise_data.py) and the first 8 systems of
# ../../../shared/data/ir-scores/adhoc5_ap.csv (TREC-5 ad hoc AP, 50 topics).
suppressPackageStartupMessages({
  library(jsonlite)
  library(car)
})

shared <- file.path("..", "..", "..", "shared", "data", "ir-scores")

long_small <- read.csv(file.path("data", "pairwise_small.csv"), stringsAsFactors = FALSE)
small <- reshape(long_small, idvar = "topic", timevar = "system", direction = "wide")
small <- small[, -1]
names(small) <- sub("^score\\.", "", names(small))
adhoc5 <- read.csv(file.path(shared, "adhoc5_ap.csv"))[, 1:8]

alts <- c("two.sided", "greater", "less")

pair_values <- function(x, y, a, b) {
  d <- x - y
  out <- list(a = a, b = b, diff = mean(d), sd_diff = sd(d))
  for (alt in alts) {
    tt <- t.test(x, y, paired = TRUE, alternative = alt)
    t2 <- t.test(x, y, alternative = alt)  # Welch (R's default var.equal = FALSE)
    out[[paste0("t_", alt)]] <- list(statistic = unname(tt$statistic), df = unname(tt$parameter),
                                     p = tt$p.value, ci = as.numeric(tt$conf.int))
    out[[paste0("t2_", alt)]] <- list(statistic = unname(t2$statistic), df = unname(t2$parameter),
                                      p = t2$p.value, ci = as.numeric(t2$conf.int))
    if (any(d != 0)) {
      wt <- suppressWarnings(wilcox.test(x, y, paired = TRUE, alternative = alt))
      out[[paste0("wilcoxon_", alt)]] <- list(statistic = unname(wt$statistic), p = wt$p.value,
                                              exact = grepl("exact", wt$method),
                                              n = sum(d != 0))
      bt <- binom.test(sum(d > 0), sum(d != 0), 0.5, alternative = alt)
      out[[paste0("sign_", alt)]] <- list(statistic = unname(bt$statistic), p = bt$p.value,
                                          n = sum(d != 0))
    }
    vt <- var.test(x, y, alternative = alt)
    out[[paste0("f_", alt)]] <- list(statistic = unname(vt$statistic),
                                     df1 = unname(vt$parameter[1]), df2 = unname(vt$parameter[2]),
                                     p = vt$p.value, ci = as.numeric(vt$conf.int))
  }
  g <- factor(rep(c("a", "b"), each = length(x)))
  lm_mean <- leveneTest(c(x, y), g, center = mean)
  lm_median <- leveneTest(c(x, y), g, center = median)
  out$levene_mean <- list(statistic = lm_mean[1, "F value"], p = lm_mean[1, "Pr(>F)"],
                          df1 = lm_mean[1, "Df"], df2 = lm_mean[2, "Df"])
  out$levene_median <- list(statistic = lm_median[1, "F value"], p = lm_median[1, "Pr(>F)"],
                            df1 = lm_median[1, "Df"], df2 = lm_median[2, "Df"])
  out
}

dataset_values <- function(wide) {
  systems <- names(wide)
  pairs <- list()
  k <- 0
  for (i in seq_along(systems)) for (j in seq_along(systems)) if (i < j) {
    k <- k + 1
    pairs[[k]] <- pair_values(wide[[i]], wide[[j]], systems[i], systems[j])
  }
  p_t <- sapply(pairs, function(v) v$t_two.sided$p)
  long <- data.frame(score = unlist(wide), system = factor(rep(systems, each = nrow(wide))),
                     topic = factor(rep(seq_len(nrow(wide)), times = ncol(wide))))
  fit <- anova(lm(score ~ topic + system, data = long))
  list(
    systems = systems,
    pairs = pairs,
    p_t = p_t,
    p_adjust = list(bonferroni = p.adjust(p_t, "bonferroni"), holm = p.adjust(p_t, "holm"),
                    bh = p.adjust(p_t, "BH")),
    ms_error = fit["Residuals", "Mean Sq"],
    df_error = fit["Residuals", "Df"]
  )
}

# Kendall's tau: system means of TREC-5 AP against RR (no ties) and P@10 (ties)
# (means rounded to 12 decimals, so that float noise cannot make or break ties)
ap <- round(colMeans(read.csv(file.path(shared, "adhoc5_ap.csv"))), 12)
rr <- round(colMeans(read.csv(file.path(shared, "adhoc5_rr.csv"))), 12)
p10 <- round(colMeans(read.csv(file.path(shared, "adhoc5_p10.csv"))), 12)
x_small <- c(1, 2, 2, 3, 4, 4, 4, 5)
y_small <- c(2, 1, 3, 3, 5, 4, 6, 6)

# p.adjust on an arbitrary vector with ties and ones
p_vec <- c(0.01, 0.04, 0.03, 0.04, 0.2, 0.5, 0.001, 0.9, 1, 0.049)

result <- list(
  R_version = R.version.string,
  car_version = as.character(packageVersion("car")),
  jsonlite_version = as.character(packageVersion("jsonlite")),
  small = dataset_values(small),
  adhoc5 = dataset_values(adhoc5),
  p_vec = p_vec,
  p_vec_adjust = list(bonferroni = p.adjust(p_vec, "bonferroni"), holm = p.adjust(p_vec, "holm"),
                      bh = p.adjust(p_vec, "BH")),
  kendall = list(
    ap_rr = cor(ap, rr, method = "kendall"),
    ap_p10 = cor(ap, p10, method = "kendall"),
    small_x = x_small, small_y = y_small,
    small = cor(x_small, y_small, method = "kendall"),
    systems = names(ap)
  )
)
out <- commandArgs(trailingOnly = TRUE)
out <- if (length(out)) out[1] else "pairwise.json"
write_json(result, out, auto_unbox = TRUE, digits = NA, pretty = TRUE)
