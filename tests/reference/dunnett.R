# Reference values for Dunnett's many-to-one comparisons with a control:
# emmeans(fit, trt.vs.ctrl ~ system, ref = control, adjust = "mvt") and
# multcomp::glht(fit, mcp(system = "Dunnett")), on lm fits (balanced, 7 empty cells, unequal
# replication with an interaction) and an lmer fit (Satterthwaite df per contrast).
# The multivariate t probabilities are recomputed with mvtnorm at a tight tolerance
# (GenzBretz(maxpts = 3e5, abseps = 1e-5)), because the packages' defaults (abseps = 1e-3) are
# too coarse for a 1e-4 comparison; emmeans' own p-values are recorded too.
# Data: python make_lsmeans_data.py.  Run from tests/reference/:  Rscript dunnett.R
# Used by tests/inference/test_dunnett.py.
suppressPackageStartupMessages({
  library(jsonlite); library(emmeans); library(multcomp); library(lme4); library(lmerTest)
})
RNGkind("Mersenne-Twister", "Inversion", "Rejection")
emm_options(msg.interaction = FALSE)
ALG <- GenzBretz(maxpts = 3e5, abseps = 1e-5)

read_case <- function(file) {
  d <- read.csv(file.path("data", file), stringsAsFactors = FALSE)
  for (f in intersect(c("topic", "system", "shard"), names(d))) d[[f]] <- factor(d[[f]])
  d
}

precise <- function(t, df, corr, side) {
  # side: 0 two-sided, 1 greater, -1 less (emmeans' tail convention)
  k <- length(t)
  sapply(seq_len(k), function(i) {
    set.seed(1)
    x <- if (side == 0) abs(t[i]) else if (side > 0) t[i] else -t[i]
    lo <- if (side == 0) rep(-x, k) else rep(-Inf, k)
    dfi <- if (is.finite(df[i])) as.integer(df[i]) else 0L
    1 - as.numeric(pmvt(lower = lo, upper = rep(x, k), corr = corr, df = dfi, algorithm = ALG))
  })
}

crit <- function(df, corr, side) {
  set.seed(1)
  qmvt(0.95, tail = if (side == 0) "both.tails" else "lower.tail", corr = corr,
       df = as.integer(df), algorithm = ALG)$quantile
}

dunnett_case <- function(file, formula, control, side = 0, mixed = FALSE, glht = TRUE) {
  message(file, " ", formula, " ", control, " ", side)
  d <- read_case(file)
  fit <- if (mixed) lmerTest::lmer(as.formula(formula), data = d, REML = TRUE) else
    lm(as.formula(formula), data = d)
  emm <- if (mixed) emmeans(fit, ~ system, lmer.df = "satterthwaite") else emmeans(fit, ~ system)
  con <- contrast(emm, "trt.vs.ctrl", ref = which(levels(d$system) == control))
  s <- summary(con, adjust = "mvt", side = side)
  V <- vcov(con)
  corr <- cov2cor(V)
  out <- list(
    file = file, formula = formula, control = control, side = side,
    contrast = as.character(s$contrast), estimate = s$estimate, SE = s$SE, df = s$df,
    t_ratio = s$t.ratio, p_emmeans = s$p.value,
    p_precise = precise(s$t.ratio, s$df, corr, side),
    corr = unname(corr)
  )
  if (!mixed) out$critical <- crit(s$df[1], corr, side)
  if (glht && !mixed) {
    d$system <- relevel(d$system, ref = control)
    fit2 <- lm(as.formula(formula), data = d)
    g <- glht(fit2, linfct = mcp(system = "Dunnett"),
              alternative = c("two.sided", "greater", "less")[c(0, 1, -1) == side])
    set.seed(1)
    sg <- summary(g, test = adjusted("single-step", algorithm = ALG))
    set.seed(1)
    ci <- confint(g, level = 0.95, calpha = adjusted_calpha(algorithm = ALG))
    out$glht <- list(contrast = names(sg$test$coefficients), estimate = unname(sg$test$coefficients),
                     SE = unname(sg$test$sigma), p = unname(sg$test$pvalues),
                     lower = unname(ci$confint[, "lwr"]), upper = unname(ci$confint[, "upr"]),
                     calpha = attr(ci$confint, "calpha"))
  }
  out
}

res <- list(
  balanced = dunnett_case("lsm_balanced.csv", "score ~ topic + system + shard", "s1"),
  balanced_greater = dunnett_case("lsm_balanced.csv", "score ~ topic + system + shard", "s1", 1),
  balanced_less = dunnett_case("lsm_balanced.csv", "score ~ topic + system + shard", "s3", -1),
  md1_missing = dunnett_case("lsm_md1_missing.csv", "score ~ topic + system", "s3"),
  shards_md3 = dunnett_case("lsm_shards.csv", "score ~ topic * system", "s2", glht = FALSE),
  mixed = dunnett_case("lsm_shards.csv", "score ~ system + (1 | topic) + (1 | topic:system)",
                       "s1", mixed = TRUE),
  R_version = R.version.string,
  packages = list(emmeans = as.character(packageVersion("emmeans")),
                  multcomp = as.character(packageVersion("multcomp")),
                  mvtnorm = as.character(packageVersion("mvtnorm")),
                  lmerTest = as.character(packageVersion("lmerTest")))
)
writeLines(toJSON(res, digits = I(15), auto_unbox = TRUE, pretty = TRUE), "dunnett.json")
