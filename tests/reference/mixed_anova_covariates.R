# Reference values for MixedResult.anova() of models with numeric covariates: lmerTest's
# anova(type = 3) with Satterthwaite and Kenward-Roger df.
# Data: data/covariates.csv. Run from tests/reference/:  Rscript mixed_anova_covariates.R
suppressPackageStartupMessages({ library(lme4); library(lmerTest); library(pbkrtest); library(jsonlite) })
ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhobeg = 0.2, rhoend = 1e-12, maxfun = 1e5),
                    check.conv.singular = "ignore")
d <- read.csv("data/covariates.csv", colClasses = c(topic = "character", system = "character"))
d$topic <- factor(d$topic); d$system <- factor(d$system)
formulas <- c("score ~ system * qlen + (1|topic)", "score ~ system + depth + (1|topic)",
              "score ~ qlen + (1|topic) + (1|system)")
res <- list()
for (fo in formulas) {
  m <- lmerTest::lmer(as.formula(fo), data = d, control = ctrl)
  tabs <- list()
  for (ddf in c("Satterthwaite", "Kenward-Roger")) {
    a <- anova(m, type = 3, ddf = ddf)
    tabs[[ddf]] <- list(terms = rownames(a), F = a[["F value"]], num_df = a$NumDF,
                        den_df = a$DenDF, p = a[["Pr(>F)"]])
  }
  res[[length(res) + 1]] <- list(file = "data/covariates.csv", formula = fo,
                                 satterthwaite = tabs[["Satterthwaite"]],
                                 kenward_roger = tabs[["Kenward-Roger"]])
}
out <- list(
  generated_by = "tests/reference/mixed_anova_covariates.R",
  R = R.version.string,
  packages = list(lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  pbkrtest = as.character(packageVersion("pbkrtest")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  cases = res
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed_anova_covariates.json")
cat("wrote mixed_anova_covariates.json\n")
