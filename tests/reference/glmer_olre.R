# Observation-level random effects in lme4's glmer (issue 28): a term with one level per row,
# the usual model of over-dispersion in a binomial or Poisson GLMM, which glmer fits (lmer
# refuses it: for a Gaussian response it is the residual). Run from tests/reference/:
#   Rscript glmer_olre.R
# Data: the TREC-8 P@10 subset of glmer.R (8 runs x 50 topics, rel = round(10 * P@10)) and
# data/glmm/poisson_depth.csv (make_glmm_data.py). Fitted to glmer's own optimum (bobyqa,
# rhoend 1e-10, tolPwrss 1e-13). Writes glmer_olre.json: fixed effects, SEs (numDeriv's
# Richardson Hessian of glmer's deviance, as glmer.R), theta, variances, logLik.
suppressMessages({library(lme4); library(jsonlite); library(numDeriv)})

w <- read.csv("../../../shared/data/ir-scores/adhoc8_p10.csv", check.names = FALSE)
systems <- c("run123", "run105", "run89", "run128", "run65", "run46", "run32", "run23")
p10 <- data.frame(topic = rep(as.character(seq_len(nrow(w))), times = length(systems)),
                  system = rep(systems, each = nrow(w)),
                  rel = round(unlist(w[systems]) * 10), stringsAsFactors = FALSE)
p10$system <- factor(p10$system, levels = systems)
pois <- read.csv("data/glmm/poisson_depth.csv", stringsAsFactors = FALSE)
pois$obs <- as.character(seq_len(nrow(pois)))

ctl <- glmerControl(optimizer = "bobyqa", tolPwrss = 1e-13,
                    optCtrl = list(rhobeg = 0.01, rhoend = 1e-10, maxfun = 1e5))
record <- function(m) {
  vc <- as.data.frame(VarCorr(m))
  # SEs from the Richardson Hessian of the deviance in (theta, beta), as glmer.R
  dd <- update(m, devFunOnly = TRUE)
  pars <- c(getME(m, "theta"), fixef(m))
  # steps of 1e-3 (relative): numDeriv's default d = 0.1 takes the PIRLS modes far from the
  # optimum, where their tolerance shows in the SEs (5e-4 on the P@10 design)
  H <- numDeriv::hessian(dd, pars, method.args = list(d = 1e-3, r = 4))
  V <- 2 * solve(H)
  nt <- length(getME(m, "theta"))
  list(fixef = as.list(fixef(m)),
       se = sqrt(diag(V))[-seq_len(nt)],
       theta = unname(getME(m, "theta")), logLik = as.numeric(logLik(m)),
       AIC = AIC(m), varcorr = list(grp = vc$grp, vcov = vc$vcov, sdcor = vc$sdcor))
}
res <- list(
  binomial_p10 = record(glmer(cbind(rel, 10 - rel) ~ system + (1 | topic) + (1 | topic:system),
                              data = p10, family = binomial, control = ctl)),
  poisson_offset = record(glmer(rel ~ system + (1 | topic) + (1 | obs) + offset(log_depth),
                                data = pois, family = poisson, control = ctl))
)
res$binomial_p10$formula <- "rel ~ system + (1|topic) + (1|topic:system)"
res$poisson_offset$formula <- "rel ~ system + (1|topic) + (1|obs)"
res$meta <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")))
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE), "glmer_olre.json")
