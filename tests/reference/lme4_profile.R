# Reference values for MixedResult.confint(method="profile") on lme4's own data sets: lme4's
# confint(method = "profile") with its default settings (data/lme4/*.csv, exported by
# lme4_datasets.R). Run from tests/reference/:  Rscript lme4_profile.R  (writes lme4_profile.json)
suppressPackageStartupMessages({ library(lme4); library(jsonlite) })
ctrl <- lmerControl(check.conv.singular = "ignore")
cases <- list(
  list(data = "Penicillin", formula = "diameter ~ 1 + (1|plate) + (1|sample)", REML = TRUE),
  list(data = "Dyestuff", formula = "Yield ~ 1 + (1|Batch)", REML = TRUE),
  list(data = "Pastes", formula = "strength ~ 1 + (1|batch/cask)", REML = FALSE)
)
fits <- lapply(cases, function(cs) {
  file <- sprintf("data/lme4/%s.csv", cs$data)
  d <- read.csv(file, stringsAsFactors = TRUE)
  m <- lmer(as.formula(cs$formula), data = d, REML = cs$REML, control = ctrl)
  pr <- confint(m, method = "profile", level = 0.95, oldNames = FALSE)
  list(data = cs$data, file = file, formula = cs$formula,
       method = if (cs$REML) "REML" else "ML", level = 0.95, names = rownames(pr),
       lower = unname(pr[, 1]), upper = unname(pr[, 2]))
})
out <- list(generated_by = "tests/reference/lme4_profile.R", R = R.version.string,
            packages = list(lme4 = as.character(packageVersion("lme4")),
                            jsonlite = as.character(packageVersion("jsonlite"))),
            fits = fits)
write_json(out, "lme4_profile.json", auto_unbox = TRUE, digits = NA, pretty = TRUE)
