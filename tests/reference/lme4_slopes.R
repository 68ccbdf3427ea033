# Reference values for linear mixed models with random slopes (issue 27), fitted by lme4/lmerTest.
# Data: data/lme4/sleepstudy.csv (lme4's, written by lme4_datasets.R), data/lme4/kb07sim.csv and
# data/lme4/irslopes.csv (seeded, make_slopes_data.py). Writes lme4_slopes.json: per fit theta,
# logLik, isSingular, VarCorr (as.data.frame: grp, var1, var2, vcov, sdcor), fixed effects with
# SEs and lmerTest's Satterthwaite df, anova() type III F tests (Satterthwaite), conditional modes
# with conditional SDs (as.data.frame(ranef(condVar = TRUE))), fitted values, and predictions on
# new data with (re.form = NULL) and without (re.form = NA) the random effects; on the IR design,
# emmeans' system means and Tukey-adjusted pairs (Satterthwaite df).
# Optimiser run to a tight tolerance (bobyqa rhoend 1e-12 and Nelder-Mead; the better kept).
# Run from tests/reference/:  Rscript lme4_slopes.R
suppressPackageStartupMessages({ library(lmerTest); library(jsonlite); library(emmeans) })

rd <- function(f) read.csv(file.path("data/lme4", f), stringsAsFactors = FALSE,
                           colClasses = c(Subject = "character", subj = "character",
                                          item = "character", topic = "character",
                                          system = "character", shard = "character"))
sets <- list(sleepstudy = rd("sleepstudy.csv"), kb07sim = rd("kb07sim.csv"),
             irslopes = rd("irslopes.csv"))
sets$sleepstudy$wk <- as.integer(sets$sleepstudy$Days >= 5)  # derived (the tests derive it too)
newdata <- list(
  sleepstudy = data.frame(Subject = c("308", "309", "330", "372"), Days = c(0, 2.5, 10, 4),
                          wk = c(0L, 0L, 1L, 0L)),
  kb07sim = data.frame(subj = c("S00", "S13", "S55"), item = c("I00", "I07", "I31"),
                       spkr = c(-0.5, -0.5, 0.5), prec = c(0.5, 0.5, -0.5),
                       load = c(0.5, -0.5, 0.25)),
  irslopes = data.frame(topic = c("t00", "t05", "t39"), system = c("s0", "s3", "s7"),
                        shard = c("B", "A", "B"), shard_c = c(0.5, -0.5, 0.5)))

fits <- list(
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days | Subject)", REML = TRUE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days | Subject)", REML = FALSE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days || Subject)", REML = TRUE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days || Subject)", REML = FALSE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (1 + log(Days + 1) | Subject)",
       REML = TRUE),
  # irmodels writes C(wk) (a numeric column read as a factor) where R writes factor(wk)
  list(data = "sleepstudy", formula = "Reaction ~ Days + (0 + factor(wk) | Subject)",
       formula_irm = "Reaction ~ Days + (0 + C(wk) | Subject)", REML = TRUE),
  list(data = "kb07sim", formula = "rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)",
       REML = TRUE),
  list(data = "kb07sim", formula = "rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)",
       REML = FALSE),
  list(data = "irslopes", formula = "score ~ system + shard + (1 + shard | topic) + (1 | topic:system)",
       REML = TRUE),
  list(data = "irslopes", formula = "score ~ system + shard_c + (1 + shard_c | topic) + (1 | topic:system)",
       REML = TRUE),
  list(data = "irslopes", formula = "score ~ system + shard + (0 + shard | topic) + (1 | topic:system)",
       REML = TRUE)
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

out <- list(generated_by = "tests/reference/lme4_slopes.R", R = R.version.string,
            packages = list(lme4 = as.character(packageVersion("lme4")),
                            lmerTest = as.character(packageVersion("lmerTest")),
                            Matrix = as.character(packageVersion("Matrix"))),
            newdata = newdata, fits = list())
for (spec in fits) {
  d <- sets[[spec$data]]
  m <- fit_best(spec$formula, d, spec$REML)
  vc <- as.data.frame(VarCorr(m))
  vc$var1[is.na(vc$var1)] <- ""
  vc$var2[is.na(vc$var2)] <- ""
  co <- summary(m)$coefficients
  re <- as.data.frame(ranef(m, condVar = TRUE))
  nd <- newdata[[spec$data]]
  entry <- list(
    data = spec$data, formula = spec$formula,
    formula_irm = if (is.null(spec$formula_irm)) spec$formula else spec$formula_irm, method = if (spec$REML) "REML" else "ML",
    nobs = nobs(m), logLik = as.numeric(logLik(m)), singular = isSingular(m),
    theta = unname(getME(m, "theta")), sigma = sigma(m),
    varcorr = list(grp = vc$grp, var1 = vc$var1, var2 = vc$var2, vcov = vc$vcov,
                   sdcor = vc$sdcor),
    fixed = list(coefficient = rownames(co), estimate = unname(co[, "Estimate"]),
                 se = unname(co[, "Std. Error"]), df = unname(co[, "df"])),
    ranef = list(grpvar = as.character(re$grpvar), term = as.character(re$term),
                 grp = as.character(re$grp), condval = re$condval, condsd = re$condsd),
    fitted = unname(fitted(m)),
    predict = unname(predict(m, newdata = nd)),
    predict_fixed = unname(predict(m, newdata = nd, re.form = NA)))
  if (spec$data == "irslopes") {  # system means and Tukey pairs (emmeans, Satterthwaite df)
    emm <- emmeans(m, "system", lmer.df = "satterthwaite")
    em <- as.data.frame(emm)
    pr <- as.data.frame(pairs(emm, adjust = "tukey"))
    entry$emmeans <- list(level = as.character(em$system), emmean = em$emmean, SE = em$SE,
                          df = em$df, contrast = as.character(pr$contrast),
                          estimate = pr$estimate, pair_SE = pr$SE, pair_df = pr$df,
                          p_tukey = pr$p.value)
  }
  a <- anova(m, type = 3, ddf = "Satterthwaite")
  entry$anova <- list(term = rownames(a), F = a[["F value"]], num_df = a[["NumDF"]],
                      den_df = a[["DenDF"]], p = a[["Pr(>F)"]])
  out$fits[[length(out$fits) + 1]] <- entry
}
# likelihood-ratio comparisons of random parts (anova(m0, m2, m1), refitted by ML and as fitted)
ss <- sets$sleepstudy
m0 <- fit_best("Reaction ~ Days + (1 | Subject)", ss, TRUE)
m2 <- fit_best("Reaction ~ Days + (Days || Subject)", ss, TRUE)
m1 <- fit_best("Reaction ~ Days + (Days | Subject)", ss, TRUE)
out$compare <- list()
for (refit in c(TRUE, FALSE)) {
  a <- anova(m0, m2, m1, refit = refit)
  out$compare[[if (refit) "refit" else "as_fitted"]] <- list(
    formulas = c("Reaction ~ Days + (1 | Subject)", "Reaction ~ Days + (Days || Subject)",
                 "Reaction ~ Days + (Days | Subject)"),
    npar = a$npar, AIC = a$AIC, BIC = a$BIC, logLik = a$logLik, Chisq = a$Chisq,
    Df = a$Df, p = a[["Pr(>Chisq)"]])
}
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "lme4_slopes.json")
cat("wrote lme4_slopes.json\n")
