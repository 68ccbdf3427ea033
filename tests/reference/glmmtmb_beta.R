# Reference values for beta mixed models (issue 28), fitted by glmmTMB's beta_family()
# (logit link; phi = precision, var(y) = mu (1 - mu) / (1 + phi); sigma(fit) is phi).
# Data: data/glmm/beta_ap.csv, beta_ap_zeros.csv, beta_crossed.csv (TREC-7/8 AP, seeded,
# make_glmm_beta_data.py). beta_ap_zeros holds exact zeros: it is fitted on Smithson &
# Verkuilen's (2006) squeeze y' = (y (n - 1) + 0.5) / n, n = number of rows.
# Writes glmmtmb_beta.json: per fit the fixed effects with SEs (vcov(fit)$cond), VarCorr,
# phi, logLik, AIC, BIC, df.residual, conditional modes (ranef), the outer parameter vector and
# its objective, and emmeans of the named factor on the link and response scales with SEs, and
# its Tukey-adjusted pairs on the link scale, as odds ratios (type = "response"; differences of
# the means for the probit and cloglog links) and as differences of the response-scale means
# (regrid). emmeans takes glmmTMB's df.residual (n minus the number of parameters: fixed
# effects, theta and log phi) as the df of its t tests, not z (= Inf) as for glmer.
# ML (REML = FALSE, glmmTMB's default), optimiser run to a tight tolerance.
# Run from tests/reference/:  Rscript glmmtmb_beta.R
suppressPackageStartupMessages({ library(glmmTMB); library(jsonlite); library(emmeans) })

rd <- function(f) read.csv(file.path("data/glmm", f), stringsAsFactors = FALSE,
                           colClasses = c(topic = "character", system = "character"))
sets <- list(beta_ap = rd("beta_ap.csv"), beta_ap_zeros = rd("beta_ap_zeros.csv"),
             beta_crossed = rd("beta_crossed.csv"))
n0 <- nrow(sets$beta_ap_zeros)
sets$beta_ap_zeros$ap <- (sets$beta_ap_zeros$ap * (n0 - 1) + 0.5) / n0
# factor levels in the data's order of first appearance (irmodels' natural order for these ids)
for (k in names(sets)) for (v in intersect(c("topic", "system", "tier", "collection"), names(sets[[k]])))
  sets[[k]][[v]] <- factor(sets[[k]][[v]], levels = unique(sets[[k]][[v]]))

fits <- list(
  list(name = "intercepts", data = "beta_ap", formula = "ap ~ system + (1 | topic)", emm = "system"),
  list(name = "probit", data = "beta_ap", formula = "ap ~ system + (1 | topic)", emm = "system",
       link = "probit"),
  list(name = "cloglog", data = "beta_ap", formula = "ap ~ system + (1 | topic)", emm = "system",
       link = "cloglog"),
  list(name = "squeezed", data = "beta_ap_zeros", formula = "ap ~ system + (1 | topic)",
       emm = "system", squeeze = TRUE),
  list(name = "crossed", data = "beta_crossed",
       formula = "ap ~ collection + (1 | topic) + (1 | system)", emm = "collection"),
  list(name = "slope", data = "beta_ap", formula = "ap ~ system + (1 + tier_c | topic)",
       emm = "system"),
  list(name = "fixed_only", data = "beta_ap", formula = "ap ~ system", emm = "system")
)

ctrl <- glmmTMBControl(optCtrl = list(iter.max = 1e4, eval.max = 1e4, rel.tol = 1e-14))
out <- list(R = R.version.string, glmmTMB = as.character(packageVersion("glmmTMB")),
            TMB = as.character(packageVersion("TMB")),
            emmeans = as.character(packageVersion("emmeans")), fits = list())
for (f in fits) {
  d <- sets[[f$data]]
  link <- if (is.null(f$link)) "logit" else f$link
  t0 <- proc.time()[["elapsed"]]
  m <- glmmTMB(as.formula(f$formula), data = d, family = beta_family(link = link), control = ctrl)
  secs <- proc.time()[["elapsed"]] - t0
  # polish: Newton steps on TMB's Laplace objective (nlminb stops at |gradient| ~ 1e-4 here),
  # then a refit started there so that every glmmTMB accessor sees the polished optimum
  p <- m$fit$par
  for (i in 1:20) {
    g <- m$obj$gr(p)
    if (max(abs(g)) < 1e-9) break
    p <- p - solve(optimHess(p, m$obj$fn, m$obj$gr), as.numeric(g))
  }
  st <- split(unname(p), factor(names(p), levels = unique(names(p))))
  m <- glmmTMB(as.formula(f$formula), data = d, family = beta_family(link = link),
               control = ctrl, start = st)
  V <- vcov(m)$cond
  fe <- fixef(m)$cond
  vc <- list()
  if (!is.null(m$modelInfo$reTrms$cond$flist) && length(m$modelInfo$reTrms$cond$flist)) {
    for (g in names(VarCorr(m)$cond)) {
      S <- VarCorr(m)$cond[[g]]
      vc[[g]] <- list(terms = colnames(S), cov = unname(as.matrix(S)),
                      sd = unname(attr(S, "stddev")))
    }
  }
  re <- list()
  if (length(vc)) {
    rr <- ranef(m)$cond
    for (g in names(rr)) re[[g]] <- list(levels = rownames(rr[[g]]), terms = colnames(rr[[g]]),
                                         values = unname(as.matrix(rr[[g]])))
  }
  em_l <- as.data.frame(emmeans(m, f$emm))
  em_r <- as.data.frame(emmeans(m, f$emm, type = "response"))
  pr <- as.data.frame(pairs(emmeans(m, f$emm), adjust = "tukey"))
  # the response scale: odds ratios (type = "response") and differences of the means (regrid)
  por <- as.data.frame(pairs(emmeans(m, f$emm, type = "response"), adjust = "tukey"))
  prg <- as.data.frame(pairs(regrid(emmeans(m, f$emm)), adjust = "tukey"))
  out$fits[[f$name]] <- list(
    data = f$data, formula = f$formula, link = link, squeeze = isTRUE(f$squeeze),
    seconds = secs, convergence = m$fit$convergence, message = m$fit$message, pdHess = m$sdr$pdHess,
    max_gradient = max(abs(m$sdr$gradient.fixed)),
    par = unname(m$fit$par), par_names = names(m$fit$par), objective = m$fit$objective,
    fixed = list(names = names(fe), estimate = unname(fe), se = unname(sqrt(diag(V)))),
    vcov = unname(as.matrix(V)),
    varcorr = vc, phi = sigma(m), logLik = as.numeric(logLik(m)), df = attr(logLik(m), "df"),
    AIC = AIC(m), BIC = BIC(m), df_residual = df.residual(m), nobs = nobs(m),
    ranef = re, fitted = unname(fitted(m)),
    emmeans_link = list(level = as.character(em_l[[f$emm]]), emmean = em_l$emmean, SE = em_l$SE,
                        df = em_l$df),
    emmeans_response = list(level = as.character(em_r[[f$emm]]), response = em_r$response,
                            SE = em_r$SE),
    pairs = list(contrast = as.character(pr$contrast), estimate = pr$estimate, SE = pr$SE,
                 df = pr$df, t = pr$t.ratio, p = pr$p.value),
    pairs_ratio = list(contrast = as.character(por$contrast), ratio = por[[2]], SE = por$SE,
                       p = por$p.value),
    pairs_regrid = list(contrast = as.character(prg$contrast), estimate = prg$estimate,
                        SE = prg$SE, df = prg$df, t = prg$t.ratio, p = prg$p.value))
  cat(f$name, "logLik", as.numeric(logLik(m)), "phi", sigma(m), "secs", secs, "grad", max(abs(m$sdr$gradient.fixed)),
      m$fit$message, "\n")
}
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "glmmtmb_beta.json")
