# Reference values for MixedResult.confint(method="profile"|"wald"): lme4's confint().
# Data: data/mixed_crossed_unbalanced.csv (python make_mixed_data.py), data/covariates.csv.
# Run from tests/reference/:  Rscript mixed_confint.R   (writes mixed_confint.json)
suppressPackageStartupMessages({ library(lme4); library(jsonlite) })
# lme4's default optimiser settings: the tight ones used for the fits elsewhere break its profiling
ctrl <- lmerControl(check.conv.singular = "ignore")
d <- read.csv("data/mixed_crossed_unbalanced.csv", colClasses = "character")
d$score <- as.numeric(d$score); d$topic <- factor(d$topic); d$system <- factor(d$system)
fits <- list()
for (formula in c("score ~ system + (1|topic) + (1|topic:system)", "score ~ system + (1|topic)"))
  for (method in c("REML", "ML")) {
    m <- lmer(as.formula(formula), data = d, REML = (method == "REML"), control = ctrl)
    vc <- as.data.frame(VarCorr(m))
    sdnames <- ifelse(is.na(vc$grp) | vc$grp == "Residual", "Residual", vc$grp)
    entries <- list()
    for (lv in c(0.95, 0.9)) {
      pr <- confint(m, method = "profile", level = lv, oldNames = FALSE)
      wa <- confint(m, method = "Wald", level = lv, oldNames = FALSE)
      entries[[as.character(lv)]] <- list(level = lv, names = rownames(pr),
                                          profile_lower = unname(pr[, 1]), profile_upper = unname(pr[, 2]),
                                          wald_lower = unname(wa[, 1]), wald_upper = unname(wa[, 2]))
    }
    fits[[length(fits) + 1]] <- list(formula = formula, method = method, sd_names = sdnames,
                                     sd = vc$sdcor, intervals = unname(entries))
  }
# a numeric covariate (data/covariates.csv)
dc <- read.csv("data/covariates.csv", colClasses = c(topic = "character", system = "character"))
mc <- lmer(score ~ system + depth + (1|topic), data = dc, control = ctrl)
pc <- confint(mc, method = "profile", oldNames = FALSE)
covariate_fit <- list(file = "data/covariates.csv", formula = "score ~ system + depth + (1|topic)",
                      method = "REML", level = 0.95, names = rownames(pc),
                      profile_lower = unname(pc[, 1]), profile_upper = unname(pc[, 2]))
out <- list(
  generated_by = "tests/reference/mixed_confint.R",
  R = R.version.string,
  packages = list(lme4 = as.character(packageVersion("lme4")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  file = "data/mixed_crossed_unbalanced.csv",
  fits = fits,
  covariate_fit = covariate_fit
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed_confint.json")
cat("wrote mixed_confint.json\n")
