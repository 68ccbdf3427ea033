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

# ---- inference on random-slope fits (issue 27 item 2; writes lme4_slopes_inference.json) ----
# confint(method = "profile") and "Wald" (oldNames = FALSE: sd_/cor_ names, lme4's .sig01.. order,
# then sigma, then the fixed effects); lmerTest's type III F tests with Satterthwaite and
# Kenward-Roger (pbkrtest) denominator df, with interactions of factors; anova(m1, m2) of fits
# whose fixed parts differ (lme4's refit by ML).
suppressPackageStartupMessages(library(pbkrtest))
kb <- sets$kb07sim
kb$S <- ifelse(kb$spkr < 0, "new", "old")        # derived factors (the tests derive them too)
kb$P <- ifelse(kb$prec < 0, "break", "maintain")
inf <- list(generated_by = "tests/reference/lme4_slopes.R (inference block)",
            R = R.version.string,
            packages = list(lme4 = as.character(packageVersion("lme4")),
                            lmerTest = as.character(packageVersion("lmerTest")),
                            pbkrtest = as.character(packageVersion("pbkrtest"))),
            confint = list(), anova = list(), compare = list())
ci_fits <- list(
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days | Subject)", REML = TRUE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days | Subject)", REML = FALSE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days || Subject)", REML = TRUE),
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days || Subject)", REML = FALSE),
  # kb07sim: Wald only (its profile takes lme4 over six minutes, the brief's limit is one)
  list(data = "kb07sim", formula = "rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)",
       REML = TRUE, profile = FALSE))
for (spec in ci_fits) {
  m <- fit_best(spec$formula, sets[[spec$data]], spec$REML)
  cw <- confint(m, method = "Wald", oldNames = FALSE)
  t0 <- proc.time()[["elapsed"]]
  cp <- if (isFALSE(spec$profile)) cw * NA else confint(m, method = "profile", oldNames = FALSE)
  secs <- proc.time()[["elapsed"]] - t0
  inf$confint[[length(inf$confint) + 1]] <- list(
    data = spec$data, formula = spec$formula, method = if (spec$REML) "REML" else "ML",
    parameter = rownames(cp), profile_lower = unname(cp[, 1]), profile_upper = unname(cp[, 2]),
    wald_lower = unname(cw[, 1]), wald_upper = unname(cw[, 2]), seconds = secs)
}
an_fits <- list(
  list(data = "sleepstudy", formula = "Reaction ~ Days + (Days | Subject)"),
  list(data = "sleepstudy", formula = "Reaction ~ Days * factor(wk) + (Days | Subject)",
       formula_irm = "Reaction ~ Days * C(wk) + (Days | Subject)"),
  list(data = "kb07sim", formula = "rt ~ spkr * prec * load + (1 + load | subj) + (1 + load | item)"),
  list(data = "kb07sim", formula = "rt ~ S * P + load + (1 + load | subj) + (1 + load | item)"),
  list(data = "irslopes", formula = "score ~ system * shard + (1 + shard | topic) + (1 | topic:system)"))
for (spec in an_fits) {
  d <- if (spec$data == "kb07sim") kb else sets[[spec$data]]
  m <- fit_best(spec$formula, d, TRUE)
  s3 <- anova(m, type = 3, ddf = "Satterthwaite")
  k3 <- anova(m, type = 3, ddf = "Kenward-Roger")
  inf$anova[[length(inf$anova) + 1]] <- list(
    data = spec$data, formula = spec$formula,
    formula_irm = if (is.null(spec$formula_irm)) spec$formula else spec$formula_irm,
    logLik = as.numeric(logLik(m)), term = rownames(s3),
    satterthwaite = list(F = s3[["F value"]], num_df = s3[["NumDF"]], den_df = s3[["DenDF"]],
                         p = s3[["Pr(>F)"]]),
    kenward_roger = list(F = k3[["F value"]], num_df = k3[["NumDF"]], den_df = k3[["DenDF"]],
                         p = k3[["Pr(>F)"]]))
}
# emmeans' Kenward-Roger df (pbkrtest's Lb_ddf) of the system means and their pairs, on the IR
# design made unbalanced (every 7th row dropped, from the first), so that the df are not integers
iru <- sets$irslopes[(seq_len(nrow(sets$irslopes)) - 1) %% 7 != 0, ]
mu <- fit_best("score ~ system + shard + (1 + shard | topic) + (1 | topic:system)", iru, TRUE)
emk <- emmeans(mu, "system", lmer.df = "kenward-roger")
emd <- as.data.frame(emk)
prk <- as.data.frame(pairs(emk, adjust = "none"))
inf$emmeans_kr <- list(formula = "score ~ system + shard + (1 + shard | topic) + (1 | topic:system)",
                       logLik = as.numeric(logLik(mu)), level = as.character(emd$system),
                       emmean = emd$emmean, df = emd$df, contrast = as.character(prk$contrast),
                       pair_df = prk$df)
cmp <- list(c("Reaction ~ 1 + (Days | Subject)", "Reaction ~ Days + (Days | Subject)"),
            c("Reaction ~ Days + (1 | Subject)", "Reaction ~ Days + (Days | Subject)"))
for (fs in cmp) {
  ma <- fit_best(fs[1], ss, TRUE)
  mb <- fit_best(fs[2], ss, TRUE)
  a <- anova(ma, mb)  # refit = TRUE: both refitted by ML
  inf$compare[[length(inf$compare) + 1]] <- list(
    formulas = fs, npar = a$npar, logLik = a$logLik, AIC = a$AIC, BIC = a$BIC,
    Chisq = a$Chisq, Df = a$Df, p = a[["Pr(>Chisq)"]])
}
writeLines(toJSON(inf, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           "lme4_slopes_inference.json")
cat("wrote lme4_slopes_inference.json\n")

# ---- residuals of mixed fits (issue 27 item 5; writes lme4_slopes_residuals.json) ----
# lme4 (random slopes): residuals(type = "response") (conditional), residuals(type = "pearson")
# (unscaled for an LMM: equal to "response") and with scaled = TRUE (divided by sigma), the
# marginal residuals y - X beta (y - predict(re.form = NA)), hatvalues() and rstudent()
# (r / (sigma sqrt(1 - h))). nlme (random intercepts, varIdent by system): residuals at levels 0
# (marginal) and 2 (conditional on topic and topic:system; nlme's level 1 leaves topic:system
# out), type "pearson" (divided by sigma times the stratum's SD ratio),
# and the standardized residuals e / sd(e) with Var(e) = R P R, P = V^-1 - V^-1 X (X'V^-1 X)^-1
# X'V^-1 (computed by hand: nlme has no hatvalues for lme fits).
suppressPackageStartupMessages(library(nlme))
res_entry_lme4 <- function(m, name) {
  list(name = name, package = "lme4", formula = deparse(formula(m), width.cutoff = 500L),
       logLik = as.numeric(logLik(m)), sigma = sigma(m), theta = unname(getME(m, "theta")),
       response = unname(residuals(m)), pearson_unscaled = unname(residuals(m, type = "pearson")),
       pearson = unname(residuals(m, type = "pearson", scaled = TRUE)),
       marginal = unname(model.response(model.frame(m)) - predict(m, re.form = NA)),
       fitted = unname(fitted(m)), hat = unname(hatvalues(m)),
       standardized = unname(rstudent(m)))
}
resid_out <- list(generated_by = "tests/reference/lme4_slopes.R (residuals block)",
                  R = R.version.string,
                  packages = list(lme4 = as.character(packageVersion("lme4")),
                                  nlme = as.character(packageVersion("nlme"))),
                  fits = list())
resid_out$fits[[1]] <- res_entry_lme4(
  fit_best("Reaction ~ Days + (Days | Subject)", sets$sleepstudy, TRUE), "sleepstudy")
resid_out$fits[[2]] <- res_entry_lme4(
  fit_best("score ~ system + shard + (1 + shard | topic) + (1 | topic:system)", sets$irslopes,
           TRUE), "irslopes")
he <- read.csv("data/mixed_hetero.csv", stringsAsFactors = FALSE,
               colClasses = c(topic = "character", system = "character"))
hctrl <- lmeControl(maxIter = 500, msMaxIter = 500, niterEM = 100, tolerance = 1e-12,
                    msTol = 1e-14, returnObject = TRUE)
h1 <- lme(score ~ system, random = ~1 | topic/system, data = he, method = "REML",
          control = hctrl, weights = varIdent(form = ~1 | system))
X <- model.matrix(~system, he)
Zt <- model.matrix(~0 + factor(topic), he)
Zts <- model.matrix(~0 + factor(paste(topic, system, sep = ":")), he)
re <- as.matrix(h1$modelStruct$reStruct)  # relative variances (VarCorr() prints rounded text)
vc <- h1$sigma^2 * c(re$topic[1, 1], re$system[1, 1])  # topic, topic:system
sd_ratio <- 1 / varWeights(h1$modelStruct$varStruct)   # per row: the stratum's SD / sigma
Rd <- h1$sigma^2 * sd_ratio^2
V <- vc[1] * tcrossprod(Zt) + vc[2] * tcrossprod(Zts) + diag(Rd)
Vi <- solve(V)
P <- Vi - Vi %*% X %*% solve(crossprod(X, Vi %*% X), crossprod(X, Vi))
e1 <- unname(residuals(h1, level = 2))
resid_out$nlme <- list(
  name = "hetero_varident_system", package = "nlme",
  formula = "score ~ system + (1|topic/system)", residual = "system", method = "REML",
  logLik = as.numeric(logLik(h1)), sigma = h1$sigma,
  components = list(topic = vc[1], `topic:system` = vc[2]),
  ratios = as.list(coef(h1$modelStruct$varStruct, unconstrained = FALSE, allCoef = TRUE)),
  response = e1, marginal = unname(residuals(h1, level = 0)),
  pearson = unname(residuals(h1, level = 2, type = "pearson")),
  fitted = unname(fitted(h1, level = 2)),
  standardized = e1 / sqrt(Rd^2 * diag(P)))
writeLines(toJSON(resid_out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           "lme4_slopes_residuals.json")
cat("wrote lme4_slopes_residuals.json\n")
