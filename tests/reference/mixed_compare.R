# Reference values for irm.compare_models(..., refit=True|False): lme4's anova() of REML fits,
# refitted by ML (refit = TRUE, lme4's default) and as fitted (refit = FALSE).
# Data: data/mixed_crossed_unbalanced.csv (python make_mixed_data.py).
# Run from tests/reference/:  Rscript mixed_compare.R   (writes mixed_compare.json)
suppressPackageStartupMessages({ library(lme4); library(jsonlite) })
ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhobeg = 0.2, rhoend = 1e-12, maxfun = 1e5),
                    check.conv.singular = "ignore")
d <- read.csv("data/mixed_crossed_unbalanced.csv", colClasses = "character")
d$score <- as.numeric(d$score); d$topic <- factor(d$topic); d$system <- factor(d$system)
m0 <- lmer(score ~ 1 + (1|topic), data = d, control = ctrl)
mt <- lmer(score ~ system + (1|topic), data = d, control = ctrl)
mts <- lmer(score ~ system + (1|topic) + (1|topic:system), data = d, control = ctrl)
entry <- function(a, formulas) {
  a <- as.data.frame(a)
  list(models = formulas, npar = a$npar, logLik = a$logLik, AIC = a$AIC, BIC = a$BIC,
       deviance = a$deviance, statistic = a$Chisq, df = a[["Df"]], p = a[["Pr(>Chisq)"]])
}
f0 <- "score ~ 1 + (1|topic)"; ft <- "score ~ system + (1|topic)"
fts <- "score ~ system + (1|topic) + (1|topic:system)"
out <- list(
  generated_by = "tests/reference/mixed_compare.R",
  R = R.version.string,
  packages = list(lme4 = as.character(packageVersion("lme4")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  file = "data/mixed_crossed_unbalanced.csv",
  random_refit = entry(anova(mt, mts), c(ft, fts)),
  random_reml = entry(anova(mt, mts, refit = FALSE), c(ft, fts)),
  fixed_refit = entry(anova(m0, mt), c(f0, ft))
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed_compare.json")
cat("wrote mixed_compare.json\n")
