# Reference values of inference on GLMMs (issue 28, item 2): likelihood-ratio tests between nested
# fits (anova(m0, m1) for glmer and glmmTMB), confidence intervals (lme4's confint: Wald and
# profile; the profile bounds also solved exactly here, by root-finding on glmer's own stage-2
# deviance function, as lme4's spline interpolation is precise to ~1e-3 only) and the R2 / ICC of
# Nakagawa, Johnson & Schielzeth (2017, J. R. Soc. Interface 14: 20170213), computed from the
# formulas of that paper with lme4's / glmmTMB's estimates (the performance and MuMIn packages are
# not installed here; the formulas are written out below).
# Run from tests/reference/:  Rscript glmer_inference.R   (writes glmer_inference.json)
# Data: data/glmm/cbpp.csv (lme4's cbpp), poisson_depth.csv, binom_slopes.csv, beta_ap.csv and the
# TREC-8 P@10 matrix ../../../shared/data/ir-scores/adhoc8_p10.csv (as glmer.R).
suppressMessages({library(lme4); library(glmmTMB); library(jsonlite); library(minqa)})

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
bap <- read.csv("data/glmm/beta_ap.csv", stringsAsFactors = FALSE,
                colClasses = c(topic = "character", system = "character"))
for (v in c("topic", "system")) bap[[v]] <- factor(bap[[v]], levels = unique(bap[[v]]))

# the optimum of glmer's own objective (as glmer.R)
tight <- glmerControl(optimizer = "bobyqa", tolPwrss = 1e-13,
                      optCtrl = list(rhobeg = 0.01, rhoend = 1e-10, maxfun = 1e5))
gfit <- function(f, d, fam, ...) suppressWarnings(glmer(f, d, family = fam, control = tight, ...))
tctl <- glmmTMBControl(optCtrl = list(iter.max = 1e4, eval.max = 1e4, rel.tol = 1e-14))
tfit <- function(f, d) {  # glmmTMB polished by Newton steps (as glmmtmb_beta.R)
  m <- glmmTMB(f, data = d, family = beta_family(), control = tctl)
  p <- m$fit$par
  for (i in 1:20) {
    g <- m$obj$gr(p)
    if (max(abs(g)) < 1e-9) break
    p <- p - solve(optimHess(p, m$obj$fn, m$obj$gr), as.numeric(g))
  }
  st <- split(unname(p), factor(names(p), levels = unique(names(p))))
  glmmTMB(f, data = d, family = beta_family(), control = tctl, start = st)
}

lrt <- function(m0, m1) {
  a <- as.data.frame(anova(m0, m1))
  if (is.null(a$npar)) {  # glmmTMB's anova: Df = number of parameters, "Chi Df" the difference
    a$npar <- a$Df
    a$Df <- a[["Chi Df"]]
  }
  list(npar = a$npar, logLik = a$logLik, AIC = a$AIC, BIC = a$BIC, deviance = a$deviance,
       Chisq = a$Chisq[2], Df = a$Df[2], p = a[["Pr(>Chisq)"]][2])
}

out <- list(versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                            glmmTMB = as.character(packageVersion("glmmTMB"))))

# ---- likelihood-ratio tests -------------------------------------------------------------------
cb1 <- gfit(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial)
cb0 <- gfit(cbind(incidence, size - incidence) ~ 1 + (1 | herd), cbpp, binomial)
pt1 <- gfit(cbind(rel, 10 - rel) ~ system + (1 | topic), p10, binomial)
pt0 <- gfit(cbind(rel, 10 - rel) ~ 1 + (1 | topic), p10, binomial)
pc1 <- gfit(cbind(rel, 10 - rel) ~ 1 + (1 | topic) + (1 | system), p10, binomial)
po1 <- gfit(rel ~ system + (1 | topic) + offset(log_depth), pois, poisson)
po0 <- gfit(rel ~ 1 + (1 | topic) + offset(log_depth), pois, poisson)
be1 <- tfit(ap ~ system + (1 | topic), bap)
be0 <- tfit(ap ~ 1 + (1 | topic), bap)
out$lrt <- list(cbpp_period = lrt(cb0, cb1), p10_system = lrt(pt0, pt1),
                p10_system_re = lrt(pt0, pc1), poisson_system = lrt(po0, po1),
                beta_system = lrt(be0, be1))

# ---- confidence intervals on cbpp ---------------------------------------------------------------
ci_list <- function(ci) list(parameter = rownames(ci), lower = unname(ci[, 1]),
                             upper = unname(ci[, 2]))
out$confint <- list(
  wald = ci_list(confint(cb1, method = "Wald")),
  wald90 = ci_list(confint(cb1, method = "Wald", level = 0.9)),
  profile = ci_list(suppressWarnings(confint(cb1, method = "profile"))),
  profile_fine = ci_list(suppressWarnings(confint(profile(cb1, delta.cutoff = 1 / 64),
                                                  level = 0.95))))
# exact profile bounds: glmer's stage-2 deviance over c(theta, beta), one parameter held at v and
# the others minimised (bobyqa), zeta(v) = sign(v - est) sqrt(dev(v) - dev_hat) solved for +-z
exact_profile <- function(m, formula, data, fam, level = 0.95) {
  dfun <- glmer(formula, data, family = fam, control = tight, devFunOnly = TRUE)
  est <- c(getME(m, "theta"), fixef(m))
  nt <- length(getME(m, "theta"))
  low <- c(getME(m, "lower"), rep(-Inf, length(fixef(m))))
  d0 <- dfun(est)
  z <- qnorm(0.5 + level / 2)
  se <- c(rep(NA, nt), sqrt(diag(as.matrix(vcov(m)))))
  pdev <- function(i, v) {
    f <- function(x) dfun(append(x, v, after = i - 1))
    r <- bobyqa(est[-i], f, lower = low[-i], control = list(rhobeg = 0.01, rhoend = 1e-10,
                                                             maxfun = 1e5))
    min(r$fval, f(est[-i]))
  }
  g <- function(i, v) sign(v - est[i]) * sqrt(max(pdev(i, v) - d0, 0))
  res <- lapply(seq_along(est), function(i) {
    step <- if (i <= nt) 0.5 * est[i] else 2 * z * se[i]
    bnd <- c(NA, NA)
    for (s in c(-1, 1)) {
      hi <- est[i] + s * step
      if (i <= nt && s < 0) hi <- max(hi, 0)
      while (s * g(i, hi) < z && !(i <= nt && s < 0 && hi <= 0)) hi <- est[i] + 2 * (hi - est[i])
      if (i <= nt && s < 0 && hi <= 0) { hi <- 0; if (-g(i, 0) < z) { bnd[1] <- 0; next } }
      bnd[(s + 3) / 2] <- uniroot(function(v) g(i, v) - s * z, sort(c(est[i], hi)),
                                  tol = 1e-10)$root
    }
    bnd
  })
  list(parameter = c(".sig01", names(fixef(m))), lower = sapply(res, `[`, 1),
       upper = sapply(res, `[`, 2), estimate = unname(est), deviance = d0)
}
out$confint$profile_exact <- exact_profile(
  cb1, cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial)
out$confint$estimate <- list(theta = getME(cb1, "theta"), fixef = unname(fixef(cb1)))

# ---- R2 and ICC (Nakagawa, Johnson & Schielzeth 2017) -------------------------------------------
# var_fixed = var(X beta) (R's var, n - 1); var_random = sum over terms of mean_i z_i' Sigma z_i
# (Johnson 2014; the variance for a random intercept); var_dist: binomial logit pi^2/3, probit 1,
# cloglog pi^2/6; Poisson log: lambda = mean_i exp(b0 + offset_i + var_random0 / 2) from the null
# model (intercept, same random terms and offset), lognormal log(1 + 1/lambda), delta 1/lambda,
# trigamma trigamma(lambda); beta logit: mu = plogis(b0) of the null model, trigamma
# trigamma(mu phi) + trigamma((1 - mu) phi) (the variance of logit(y)), delta
# 1 / (mu (1 - mu) (1 + phi)). R2m = vf / (vf + vr + vd), R2c = (vf + vr) / (vf + vr + vd);
# ICC adjusted vr / (vr + vd), conditional vr / (vf + vr + vd), by component vr_k / (vr + vd).
vrand_lme4 <- function(m) {
  mms <- getME(m, "mmList")
  vc <- VarCorr(m)
  sapply(seq_along(mms), function(k) {
    S <- as.matrix(vc[[k]]); Zk <- as.matrix(mms[[k]])
    mean(rowSums((Zk %*% S) * Zk))
  })
}
r2_parts <- function(vf, vr, vd) {
  den <- vf + sum(vr) + vd
  list(var_fixed = vf, var_random = sum(vr), var_components = unname(vr), var_dist = vd,
       r2_marginal = vf / den, r2_conditional = (vf + sum(vr)) / den,
       icc_adjusted = sum(vr) / (sum(vr) + vd), icc_conditional = sum(vr) / den,
       icc_components = unname(vr) / (sum(vr) + vd))
}
r2_binomial <- function(m) {
  vf <- var(as.vector(getME(m, "X") %*% fixef(m)))
  link <- family(m)$link
  vd <- switch(link, logit = pi^2 / 3, probit = 1, cloglog = pi^2 / 6)
  c(r2_parts(vf, vrand_lme4(m), vd), list(theta = unname(getME(m, "theta")),
                                          fixef = unname(fixef(m))))
}
r2_poisson <- function(m, m0, off) {
  vf <- var(as.vector(getME(m, "X") %*% fixef(m)))
  lam <- mean(exp(fixef(m0)[[1]] + off + sum(vrand_lme4(m0)) / 2))
  vr <- vrand_lme4(m)
  res <- lapply(list(lognormal = log1p(1 / lam), delta = 1 / lam, trigamma = trigamma(lam)),
                function(vd) r2_parts(vf, vr, vd))
  c(res, list(lambda = lam, beta0_null = fixef(m0)[[1]], var_random_null = sum(vrand_lme4(m0)),
              theta = unname(getME(m, "theta")), fixef = unname(fixef(m))))
}
cbp <- gfit(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp,
            binomial(link = "probit"))
sl1 <- gfit(cbind(succ, n - succ) ~ x + (1 + x | g), slopes, binomial)
# profile intervals with a random slope (lme4's SD/correlation parametrisation; its spline
# falls back to linear interpolation for the non-monotonic correlation profile, which reaches
# neither -1 nor 1's critical value: both limits reported)
out$confint$profile_slopes <- ci_list(suppressWarnings(confint(sl1, method = "profile",
                                                               oldNames = FALSE)))
# the beta fit: glmmTMB
vf_b <- var(as.vector(getME(be1, "X") %*% fixef(be1)$cond))
vr_b <- as.numeric(VarCorr(be1)$cond$topic)
phi_b <- sigma(be1)
mu_b <- plogis(fixef(be0)$cond[[1]])
out$r2 <- list(
  cbpp_logit = r2_binomial(cb1), cbpp_probit = r2_binomial(cbp), p10_topic = r2_binomial(pt1),
  p10_crossed = r2_binomial(pc1), binom_slopes = r2_binomial(sl1),
  poisson_offset = r2_poisson(po1, po0, pois$log_depth),
  beta_ap = list(trigamma = r2_parts(vf_b, vr_b, trigamma(mu_b * phi_b) +
                                       trigamma((1 - mu_b) * phi_b)),
                 delta = r2_parts(vf_b, vr_b, 1 / (mu_b * (1 - mu_b) * (1 + phi_b))),
                 mu_null = mu_b, beta0_null = fixef(be0)$cond[[1]], phi = phi_b,
                 fixef = unname(fixef(be1)$cond)))

writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), "glmer_inference.json")
