# Reference values for fits whose optimum lies inside the parameter space although irmodels
# once stopped at a variance component of 0 (see make_mixed_boundary_data.py).
# Data: data/mixed_boundary.csv. For each design and model: lme4/lmerTest REML with bobyqa and
# with Nelder-Mead, the better likelihood kept; its variance components and the Satterthwaite
# F test of system.
# Run from tests/reference/:  Rscript mixed_boundary.R   (writes mixed_boundary.json)
suppressPackageStartupMessages({ library(lmerTest); library(jsonlite) })

all <- read.csv("data/mixed_boundary.csv", colClasses = "character")
all$score <- as.numeric(all$score)
models <- list(
  three = "score ~ system + (1|topic) + (1|topic:system) + (1|shard)",
  two = "score ~ system + (1|topic) + (1|topic:system)",
  one = "score ~ system + (1|topic)"
)
fit_best <- function(f, d) {
  best <- NULL
  for (opt in c("bobyqa", "Nelder_Mead")) {
    m <- lmerTest::lmer(as.formula(f), data = d, REML = TRUE,
                        control = lmerControl(optimizer = opt, check.conv.singular = "ignore",
                                              check.conv.grad = "ignore"))
    if (is.null(best) || as.numeric(logLik(m)) > as.numeric(logLik(best))) best <- m
  }
  best
}
out <- list(generated_by = "tests/reference/mixed_boundary.R", R = R.version.string,
            packages = list(lme4 = as.character(packageVersion("lme4")),
                            lmerTest = as.character(packageVersion("lmerTest"))),
            file = "data/mixed_boundary.csv", fits = list())
for (des in unique(all$design)) {
  d <- all[all$design == des, ]
  for (v in c("topic", "system", "shard")) d[[v]] <- factor(d[[v]])
  use <- if (des == "m1") c("one") else c("three", "two")
  for (k in use) {
    m <- fit_best(models[[k]], d)
    vc <- as.data.frame(VarCorr(m))
    a <- anova(m, ddf = "Satterthwaite")
    out$fits[[length(out$fits) + 1]] <- list(
      design = des, formula = models[[k]], logLik = as.numeric(logLik(m)),
      components = setNames(as.list(vc$vcov), vc$grp),
      F = a[["F value"]][1], num_df = a[["NumDF"]][1], den_df = a[["DenDF"]][1],
      p = a[["Pr(>F)"]][1])
  }
}
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed_boundary.json")
cat("wrote mixed_boundary.json\n")
