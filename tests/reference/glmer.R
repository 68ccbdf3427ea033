# Reference values of lme4's glmer for irmodels' GLMMs (issue 28). Run from tests/reference/:
#   python make_glmm_data.py && Rscript glmer.R
# Data: data/glmm/cbpp.csv (written here from lme4's cbpp), data/glmm/poisson_depth.csv and
# data/glmm/binom_slopes.csv (make_glmm_data.py), and the TREC-8 P@10 matrix
# ../../../shared/data/ir-scores/adhoc8_p10.csv (8 systems, 50 topics; rel = round(P@10 * 10)).
# Each model is fitted twice: "tight" (bobyqa in both stages, rhoend 1e-10, tolPwrss 1e-12: the
# optimum of glmer's own objective, which irmodels is compared with) and glmer's defaults
# ("default": estimates, logLik and the median time of 5 fits, for the report).
suppressMessages({library(lme4); library(jsonlite); library(numDeriv)})

write.csv(lme4::cbpp, "data/glmm/cbpp.csv", row.names = FALSE)
cbpp <- read.csv("data/glmm/cbpp.csv", colClasses = c("character", "numeric", "numeric",
                                                     "character"))
w <- read.csv("../../../shared/data/ir-scores/adhoc8_p10.csv", check.names = FALSE)
systems <- c("run123", "run105", "run89", "run128", "run65", "run46", "run32", "run23")
p10 <- data.frame(topic = rep(as.character(seq_len(nrow(w))), times = length(systems)),
                  system = rep(systems, each = nrow(w)),
                  rel = round(unlist(w[systems]) * 10), stringsAsFactors = FALSE)
p10$system <- factor(p10$system, levels = systems)
pois <- read.csv("data/glmm/poisson_depth.csv", stringsAsFactors = FALSE)
slopes <- read.csv("data/glmm/binom_slopes.csv", stringsAsFactors = FALSE)

# glmer's default tolPwrss (1e-7) leaves the PIRLS modes ~1e-5 off in u, which moves its
# Laplace deviance by ~1e-5 and its finite-difference Hessian (the SEs) by up to 1e-3; 1e-14
# gives the Laplace deviance itself (irmodels equals it to 1e-10); 1e-13 where 1e-14 fails
tight_ctl <- function(tol) glmerControl(optimizer = "bobyqa", tolPwrss = tol,
                                        optCtrl = list(rhobeg = 0.01, rhoend = 1e-10,
                                                       maxfun = 1e5))

record <- function(m) {
  vc <- as.data.frame(VarCorr(m))
  re <- as.data.frame(ranef(m, condVar = TRUE))
  list(fixef = as.list(fixef(m)), se = as.list(sqrt(diag(as.matrix(vcov(m))))),
       vcov = unname(as.matrix(vcov(m))),
       theta = unname(getME(m, "theta")), logLik = as.numeric(logLik(m)),
       deviance = deviance(m), AIC = AIC(m), BIC = BIC(m), df_resid = df.residual(m),
       singular = isSingular(m),
       varcorr = list(grp = vc$grp, var1 = vc$var1, var2 = ifelse(is.na(vc$var2), "", vc$var2),
                      vcov = vc$vcov, sdcor = vc$sdcor),
       ranef = list(grp = as.character(re$grpvar), term = as.character(re$term),
                    level = as.character(re$grp), condval = re$condval, condsd = re$condsd),
       z = as.list(coef(summary(m))[, 3]), p = as.list(coef(summary(m))[, 4]),
       fitted = unname(fitted(m)), resid_deviance = unname(residuals(m, type = "deviance")),
       resid_pearson = unname(residuals(m, type = "pearson")))
}

fit <- function(formula, data, family, nAGQ = 1, ...) {
  tm <- numeric(5)
  for (i in 1:5) tm[i] <- system.time(d <- glmer(formula, data, family = family,
                                                 nAGQ = nAGQ, ...))[["elapsed"]]
  for (tol in c(1e-14, 1e-13, 1e-12)) {
    t <- tryCatch(suppressWarnings(glmer(formula, data, family = family, nAGQ = nAGQ,
                                         control = tight_ctl(tol), ...)),
                  error = function(e) NULL)
    if (!is.null(t)) break
  }
  out <- record(t)
  out$tolPwrss <- tol
  # lme4's deriv12 Hessian keeps PIRLS noise of ~1e-5 to 1e-4 in the SEs even at tolPwrss
  # 1e-14 (the crossed design most): the SEs from numDeriv's Richardson Hessian of the same
  # deviance function at the same optimum are the sharper reference
  if (nAGQ == 0) {  # vcov from R_X (no Hessian over beta)
    out$se_richardson <- unname(sqrt(diag(as.matrix(vcov(t)))))
  } else {
    dfun <- glmer(formula, data, family = family, nAGQ = nAGQ, control = tight_ctl(tol),
                  devFunOnly = TRUE, ...)
    par <- c(getME(t, "theta"), fixef(t))
    h <- numDeriv::hessian(dfun, par)
    nth <- length(getME(t, "theta"))
    vh <- 2 * solve(h)[-seq_len(nth), -seq_len(nth), drop = FALSE]
    out$se_richardson <- sqrt(diag(vh))
  }
  out$default <- list(fixef = as.list(fixef(d)), se = as.list(sqrt(diag(as.matrix(vcov(d))))),
                      theta = unname(getME(d, "theta")), logLik = as.numeric(logLik(d)),
                      seconds = median(tm))
  out$formula <- deparse(formula)
  out$nAGQ <- nAGQ
  out
}

res <- list()
res$cbpp_logit <- fit(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial)
res$cbpp_agq10 <- fit(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial,
                      nAGQ = 10)
res$cbpp_nagq0 <- fit(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial,
                      nAGQ = 0)
res$cbpp_probit <- fit(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp,
                       binomial(link = "probit"))
res$p10_topic <- fit(cbind(rel, 10 - rel) ~ system + (1 | topic), p10, binomial)
res$p10_topic_agq10 <- fit(cbind(rel, 10 - rel) ~ system + (1 | topic), p10, binomial,
                           nAGQ = 10)
res$p10_crossed <- fit(cbind(rel, 10 - rel) ~ 1 + (1 | topic) + (1 | system), p10, binomial)
res$poisson_offset <- fit(rel ~ system + (1 | topic) + offset(log_depth), pois, poisson)
res$binom_slopes <- fit(cbind(succ, n - succ) ~ x + (1 + x | g), slopes, binomial)

res$versions <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                     Matrix = as.character(packageVersion("Matrix")))
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA, pretty = FALSE), "glmer.json")
