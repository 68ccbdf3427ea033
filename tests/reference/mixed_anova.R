# Reference values for MixedResult.anova(type=3, ddf="satterthwaite"|"kenward-roger"):
# lmerTest's anova() (Kenward-Roger through pbkrtest) on REML fits.
# Data: data/mixed_crossed_unbalanced.csv, data/mixed_shards_unbalanced.csv (make_mixed_data.py).
# Run from tests/reference/:  Rscript mixed_anova.R   (writes mixed_anova.json)
suppressPackageStartupMessages({ library(lme4); library(lmerTest); library(pbkrtest); library(jsonlite) })
ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhobeg = 0.2, rhoend = 1e-12, maxfun = 1e5),
                    check.conv.singular = "ignore")
read <- function(file) {
  d <- read.csv(file, colClasses = "character")
  d$score <- as.numeric(d$score)
  for (f in intersect(c("topic", "system", "shard"), names(d))) d[[f]] <- factor(d[[f]])
  d
}
cases <- list(
  list(file = "data/mixed_crossed_unbalanced.csv",
       formula = "score ~ system + (1|topic) + (1|topic:system)"),
  list(file = "data/mixed_crossed_unbalanced.csv", formula = "score ~ system + (1|topic)"),
  list(file = "data/mixed_shards_unbalanced.csv",
       formula = "score ~ system * shard + (1|topic)"),
  list(file = "data/mixed_shards_unbalanced.csv",
       formula = "score ~ system + shard + (1|topic) + (1|topic:system)")
)
res <- list()
for (cs in cases) {
  d <- read(cs$file)
  m <- lmerTest::lmer(as.formula(cs$formula), data = d, control = ctrl)
  tabs <- list()
  for (ddf in c("Satterthwaite", "Kenward-Roger")) {
    a <- anova(m, type = 3, ddf = ddf)
    tabs[[ddf]] <- list(terms = rownames(a), F = a[["F value"]], num_df = a$NumDF,
                        den_df = a$DenDF, p = a[["Pr(>F)"]])
  }
  res[[length(res) + 1]] <- list(file = cs$file, formula = cs$formula,
                                 satterthwaite = tabs[["Satterthwaite"]],
                                 kenward_roger = tabs[["Kenward-Roger"]])
}
out <- list(
  generated_by = "tests/reference/mixed_anova.R",
  R = R.version.string,
  packages = list(lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  pbkrtest = as.character(packageVersion("pbkrtest")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  cases = res
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed_anova.json")
cat("wrote mixed_anova.json\n")
