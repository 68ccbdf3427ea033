# Reference values for lme4's own data sets (and one boundary fit), fitted by lme4/lmerTest.
# Exports each data set to data/lme4/<name>.csv (factors as their labels) and writes
# lme4_datasets.json: per fit the variance components, logLik, fixed effects with SEs and
# lmerTest's Satterthwaite df, anova() type III F tests (Satterthwaite), and isSingular.
# The optimiser runs to a tight tolerance (bobyqa, rhoend 1e-12; Nelder-Mead too, the better
# likelihood kept) so that the fixture is accurate to far better than the tests' 1e-6.
# Run from tests/reference/:  Rscript lme4_datasets.R
suppressPackageStartupMessages({ library(lmerTest); library(jsonlite) })

dir.create("data/lme4", showWarnings = FALSE, recursive = TRUE)
sets <- list()
sets$sleepstudy <- lme4::sleepstudy
sets$Penicillin <- lme4::Penicillin
sets$Pastes <- lme4::Pastes[, c("strength", "batch", "cask")]
sets$Dyestuff <- lme4::Dyestuff
cake <- lme4::cake
sets$cake <- data.frame(replicate = cake$replicate, recipe = cake$recipe, temp = cake$temp,
                        angle = cake$angle)
ie <- lme4::InstEval
ie <- ie[as.integer(ie$s) <= 150, c("s", "d", "dept", "service", "y")]  # first 150 students
sets$InstEval150 <- droplevels(ie)
# a constant 10 topics x 4 systems matrix with one differing cell: the REML topic variance
# is 0 (lmerTest's den_df is then n - p = 36)
bd <- expand.grid(system = paste0("s", 0:3), topic = paste0("t", 0:9))[, c("topic", "system")]
bd$score <- 0.5
bd$score[bd$topic == "t0" & bd$system == "s1"] <- 0.8
sets$boundary <- bd

fits <- list(
  list(data = "sleepstudy", formula = "Reaction ~ Days + (1|Subject)", REML = TRUE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (1|Subject)", REML = FALSE),
  list(data = "Penicillin", formula = "diameter ~ 1 + (1|plate) + (1|sample)", REML = TRUE),
  list(data = "Pastes", formula = "strength ~ 1 + (1|batch/cask)", REML = TRUE),
  list(data = "Dyestuff", formula = "Yield ~ 1 + (1|Batch)", REML = TRUE),
  list(data = "cake", formula = "angle ~ recipe * temp + (1|recipe:replicate)", REML = TRUE),
  list(data = "cake", formula = "angle ~ recipe * temp + (1|recipe:replicate)", REML = FALSE),
  list(data = "InstEval150", formula = "y ~ service + (1|s) + (1|d) + (1|dept)", REML = TRUE),
  list(data = "boundary", formula = "score ~ system + (1|topic)", REML = TRUE)
)

fit_best <- function(f, d, reml) {
  best <- NULL
  ctrls <- list(
    lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e6),
                check.conv.singular = "ignore", check.conv.grad = "ignore"),
    lmerControl(optimizer = "Nelder_Mead",
                optCtrl = list(FtolAbs = 1e-15, FtolRel = 1e-15, XtolRel = 1e-12, maxfun = 1e6),
                check.conv.singular = "ignore", check.conv.grad = "ignore"))
  for (ctrl in ctrls) {
    m <- lmerTest::lmer(as.formula(f), data = d, REML = reml, control = ctrl)
    if (is.null(best) || as.numeric(logLik(m)) > as.numeric(logLik(best))) best <- m
  }
  best
}

out <- list(generated_by = "tests/reference/lme4_datasets.R", R = R.version.string,
            packages = list(lme4 = as.character(packageVersion("lme4")),
                            lmerTest = as.character(packageVersion("lmerTest")),
                            Matrix = as.character(packageVersion("Matrix"))),
            data = list(), fits = list())
for (nm in names(sets)) {
  file <- file.path("data/lme4", paste0(nm, ".csv"))
  write.csv(sets[[nm]], file, row.names = FALSE)
  out$data[[nm]] <- file
}
for (spec in fits) {
  d <- sets[[spec$data]]
  m <- fit_best(spec$formula, d, spec$REML)
  vc <- as.data.frame(VarCorr(m))
  co <- summary(m)$coefficients
  entry <- list(
    data = spec$data, formula = spec$formula, method = if (spec$REML) "REML" else "ML",
    nobs = nobs(m), logLik = as.numeric(logLik(m)), singular = isSingular(m),
    theta = unname(getME(m, "theta")),
    components = setNames(as.list(vc$vcov), vc$grp),
    fixed = list(coefficient = rownames(co), estimate = unname(co[, "Estimate"]),
                 se = unname(co[, "Std. Error"]), df = unname(co[, "df"])))
  if (length(attr(terms(m), "term.labels")) > 0) {
    a <- anova(m, type = 3, ddf = "Satterthwaite")
    entry$anova <- list(term = rownames(a), F = a[["F value"]], num_df = a[["NumDF"]],
                        den_df = a[["DenDF"]], p = a[["Pr(>F)"]])
  }
  out$fits[[length(out$fits) + 1]] <- entry
}
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "lme4_datasets.json")
cat("wrote lme4_datasets.json\n")
