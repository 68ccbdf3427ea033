# Reference values for least-squares (estimated marginal) means and Tukey comparisons on
# unbalanced designs: emmeans(lm(...), pairwise ~ system, adjust = "tukey"), and on a mixed
# fit (lmer, Satterthwaite df per contrast, lmerTest mode); with a numeric covariate the
# means are at its mean (emmeans' default reference grid).
# Data: python make_lsmeans_data.py (writes data/lsm_*.csv).
# Run from tests/reference/:  Rscript emmeans.R   (writes emmeans.json)
# Used by tests/models/test_lsmeans.py.
suppressPackageStartupMessages({
  library(jsonlite); library(emmeans); library(lme4); library(lmerTest)
})
emm_options(msg.interaction = FALSE)

read_case <- function(file) {
  d <- read.csv(file.path("data", file), stringsAsFactors = FALSE)
  for (f in intersect(c("topic", "system", "shard"), names(d))) d[[f]] <- factor(d[[f]])
  d
}

emm_case <- function(file, formula) {
  d <- read_case(file)
  fit <- lm(as.formula(formula), data = d)
  emm <- emmeans(fit, ~ system)
  em <- summary(emm)
  pr <- pairs(emm, adjust = "tukey")
  ps <- summary(pr, infer = c(TRUE, TRUE), adjust = "tukey")
  out <- list(
    file = file, formula = formula,
    means = list(level = as.character(em$system), emmean = em$emmean, SE = em$SE),
    pairs = list(contrast = as.character(ps$contrast), estimate = ps$estimate, SE = ps$SE,
                 df = ps$df, t_ratio = ps$t.ratio, p_value = ps$p.value,
                 lower = ps$lower.CL, upper = ps$upper.CL),
    sigma2 = sigma(fit)^2, df_resid = df.residual(fit)
  )
  if (!grepl("shard|qlen", formula)) {
    # R's TukeyHSD on the same (unbalanced) fit: projections of model.tables, not LS means
    hsd <- TukeyHSD(aov(as.formula(formula), data = d), "system")$system
    out$tukeyhsd <- list(contrast = rownames(hsd), diff = unname(hsd[, "diff"]),
                         p_adj = unname(hsd[, "p adj"]))
  }
  out
}

mixed_case <- function(file, formula) {
  d <- read_case(file)
  fit <- lmerTest::lmer(as.formula(formula), data = d, REML = TRUE)
  emm <- emmeans(fit, ~ system, lmer.df = "satterthwaite")
  em <- summary(emm)
  ps <- summary(pairs(emm, adjust = "tukey"), infer = c(TRUE, TRUE), adjust = "tukey")
  list(
    file = file, formula = formula,
    means = list(level = as.character(em$system), emmean = em$emmean, SE = em$SE, df = em$df),
    pairs = list(contrast = as.character(ps$contrast), estimate = ps$estimate, SE = ps$SE,
                 df = ps$df, t_ratio = ps$t.ratio, p_value = ps$p.value,
                 lower = ps$lower.CL, upper = ps$upper.CL)
  )
}

res <- list(
  md1_missing = emm_case("lsm_md1_missing.csv", "score ~ topic + system"),
  shards_md2 = emm_case("lsm_shards.csv", "score ~ topic + system + shard"),
  shards_md3 = emm_case("lsm_shards.csv", "score ~ topic * system"),
  shards_order = emm_case("lsm_shards.csv", "score ~ shard + system + topic"),
  shards_sysshard = emm_case("lsm_shards.csv", "score ~ system * shard + topic"),
  covariate = emm_case("lsm_covariate.csv", "score ~ topic + system + qlen"),
  covariate_slopes = emm_case("lsm_covariate.csv", "score ~ topic + system * qlen"),
  mixed_shards = mixed_case("lsm_shards.csv", "score ~ system + (1 | topic) + (1 | topic:system)"),
  R_version = R.version.string,
  packages = list(emmeans = as.character(packageVersion("emmeans")),
                  lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")))
)
writeLines(toJSON(res, digits = I(15), auto_unbox = TRUE, pretty = TRUE), "emmeans.json")
