# Reference values for generalised linear models (irm.anova(..., family=)) and their marginal
# means on the link and response scales:
#   glm(cbind(rel, 10 - rel) ~ topic + system, binomial)           (TREC-8 P@10 subset, logit)
#   the same with binomial(link = "probit")
#   glm(found ~ topic + system + offset(log_depth), poisson)        (seeded counts)
# For each: coefficients (Wald z), deviance, null deviance, logLik, AIC, BIC, residuals of
# every type, anova(fit, test = "Chisq"), car::Anova(fit, type = 3, test = "LR"), drop1;
# emmeans(fit, ~ system) on the link and the response scale (type = "response"), pairs with
# Tukey adjustment on both scales (odds ratios / rate ratios), pairs(regrid(emm)) (differences
# of probabilities or rates), and Dunnett (contrast(emm, "trt.vs.ctrl"), adjust = "mvt") with
# p-values recomputed by mvtnorm::pmvnorm with Miwa's algorithm (deterministic, df = Inf).
# The fits use glm.control(epsilon = 1e-14, maxit = 100), restarted from the estimate until the
# coefficients stop changing (tight_glm): R's default (1e-8 on the relative change of the
# deviance) stops up to ~1e-7 away from the maximum in the coefficients, too coarse for a 1e-8
# comparison; R's default fit is recorded too (iter_default, coef_default).
# Data: python make_glm_data.py (writes data/glmm/glm_*.csv).
# Run from tests/reference/:  Rscript glm.R   (writes glm.json)
# poisson_interaction: types 2 and 3 (sum-to-zero contrasts) with an interaction.
# glmer_logit: the same means and contrasts of a glmer fit (the hooks GlmmResult shares).
# Used by tests/models/test_glm_against_r.py and tests/models/test_link_means.py.
suppressPackageStartupMessages({
  library(jsonlite); library(emmeans); library(car); library(mvtnorm)
})
RNGkind("Mersenne-Twister", "Inversion", "Rejection")
emm_options(msg.interaction = FALSE)
# df = Inf: Miwa's deterministic algorithm (GenzBretz stops at an error of ~1e-6 here)
ALG <- Miwa(steps = 4096)

read_case <- function(file) {
  d <- read.csv(file.path("data", "glmm", file), stringsAsFactors = FALSE)
  # levels in the order of first appearance: the files are written in irmodels' level order
  for (f in intersect(c("topic", "system"), names(d))) d[[f]] <- factor(d[[f]], levels = unique(d[[f]]))
  d
}

table_list <- function(tab) {
  out <- list(term = rownames(tab))
  for (col in colnames(tab)) out[[col]] <- unname(as.numeric(tab[[col]]))
  out
}

precise <- function(z, corr) {
  k <- length(z)
  sapply(seq_len(k), function(i) {
    set.seed(1)
    x <- abs(z[i])
    p <- pmvnorm(lower = rep(-x, k), upper = rep(x, k), corr = corr, algorithm = ALG)
    1 - as.numeric(p)
  })
}

emm_list <- function(s, est_col) {
  list(level = as.character(s[[1]]), estimate = s[[est_col]], SE = s$SE,
       lower = s$asymp.LCL, upper = s$asymp.UCL)
}

con_list <- function(s, est_col, ci) {
  list(contrast = as.character(s$contrast), estimate = s[[est_col]], SE = s$SE,
       z_ratio = s$z.ratio, p_value = s$p.value, lower = ci$asymp.LCL, upper = ci$asymp.UCL)
}

tight_glm <- function(f, family, d) {
  # glm.control(epsilon = 1e-14) still stops ~1e-8 from the maximum with a non-canonical link
  # (Fisher scoring converges linearly): restart from the estimate until the coefficients stop
  # changing (each restart takes at least one more step)
  ctl <- glm.control(epsilon = 1e-14, maxit = 100)
  fit <- glm(f, family = family, data = d, control = ctl)
  for (i in 1:50) {
    fit2 <- glm(f, family = family, data = d, control = ctl, start = coef(fit))
    step <- max(abs(coef(fit2) - coef(fit)))
    fit <- fit2
    if (step < 1e-13) break
  }
  fit
}

glm_case <- function(file, formula, family, offset = NULL) {
  d <- read_case(file)
  f <- as.formula(formula)
  fit <- tight_glm(f, family, d)
  fit_default <- glm(f, family = family, data = d)
  cf <- summary(fit)$coefficients
  emm <- emmeans(fit, ~ system)
  link_s <- summary(emm)
  resp_s <- summary(emm, type = "response")
  resp_col <- setdiff(names(resp_s), c("system", "SE", "df", "asymp.LCL", "asymp.UCL"))[1]
  pr_link <- pairs(emm, adjust = "tukey")
  pr_resp <- pairs(emm, type = "response", adjust = "tukey")
  ratio_col <- setdiff(names(summary(pr_resp)),
                       c("contrast", "SE", "df", "null", "z.ratio", "p.value"))[1]
  pr_diff <- pairs(regrid(emm), adjust = "tukey")
  dn_link <- contrast(emm, "trt.vs.ctrl", ref = 1)
  dn_resp <- contrast(emm, "trt.vs.ctrl", ref = 1, type = "response")
  dn_diff <- contrast(regrid(emm), "trt.vs.ctrl", ref = 1)
  dn_s <- summary(dn_link, adjust = "mvt")
  dn_diff_s <- summary(dn_diff, adjust = "mvt")
  list(
    file = file, formula = formula, family = family$family, link = family$link,
    coef = list(name = rownames(cf), estimate = unname(cf[, 1]), SE = unname(cf[, 2]),
                z = unname(cf[, 3]), p = unname(cf[, 4])),
    vcov_diag = unname(diag(vcov(fit))),
    deviance = deviance(fit), null_deviance = fit$null.deviance,
    df_residual = df.residual(fit), df_null = fit$df.null,
    loglik = as.numeric(logLik(fit)), aic = AIC(fit), bic = BIC(fit),
    iter = fit$iter, iter_default = fit_default$iter,
    coef_default = unname(coef(fit_default)),
    fitted = unname(fitted(fit)), linear_predictor = unname(fit$linear.predictors),
    resid_deviance = unname(residuals(fit, "deviance")),
    resid_pearson = unname(residuals(fit, "pearson")),
    resid_response = unname(residuals(fit, "response")),
    resid_working = unname(residuals(fit, "working")),
    anova_chisq = table_list(as.data.frame(anova(fit, test = "Chisq"))),
    anova_type3 = table_list(as.data.frame(Anova(fit, type = 3, test = "LR"))),
    drop1 = table_list(as.data.frame(drop1(fit, test = "Chisq"))),
    emm_link = emm_list(link_s, "emmean"),
    emm_response = emm_list(resp_s, resp_col),
    pairs_link = con_list(summary(pr_link), "estimate", confint(pr_link, adjust = "tukey")),
    pairs_response = con_list(summary(pr_resp), ratio_col,
                              confint(pr_resp, adjust = "tukey")),
    pairs_difference = con_list(summary(pr_diff), "estimate",
                                confint(pr_diff, adjust = "tukey")),
    dunnett_link = c(con_list(dn_s, "estimate", confint(dn_link, adjust = "none")),
                     list(p_precise = precise(dn_s$z.ratio, cov2cor(vcov(dn_link))))),
    dunnett_response = con_list(summary(dn_resp, adjust = "mvt"),
                                setdiff(names(summary(dn_resp)),
                                        c("contrast", "SE", "df", "null", "z.ratio",
                                          "p.value"))[1],
                                confint(dn_resp, adjust = "none")),
    dunnett_difference = c(con_list(dn_diff_s, "estimate", confint(dn_diff, adjust = "none")),
                           list(p_precise = precise(dn_diff_s$z.ratio,
                                                    cov2cor(vcov(dn_diff)))))
  )
}

interaction_case <- function(file, formula) {
  # types 2 and 3 with an interaction: car::Anova(type = 2) (coding-free) and type 3 under
  # sum-to-zero contrasts (what irmodels' type 3 uses); the sequential table and coefficients
  # with R's default treatment contrasts
  d <- read_case(file)
  d$depth_level <- factor(d$depth_level)
  f <- as.formula(formula)
  fit <- tight_glm(f, poisson(), d)
  old <- options(contrasts = c("contr.sum", "contr.poly"))
  on.exit(options(old))
  fit_sum <- tight_glm(f, poisson(), d)
  list(file = file, formula = formula,
       coef = list(name = names(coef(fit)), estimate = unname(coef(fit))),
       deviance = deviance(fit),
       anova_chisq = table_list(as.data.frame(anova(fit, test = "Chisq"))),
       anova_type2 = table_list(as.data.frame(Anova(fit, type = 2, test = "LR"))),
       anova_type3 = table_list(as.data.frame(Anova(fit_sum, type = 3, test = "LR"))))
}

glmer_case <- function(file, formula) {
  # the same hooks on a GLMM (irm.mixed(family=)): emmeans of a glmer fit on both scales
  d <- read_case(file)
  fit <- lme4::glmer(as.formula(formula), family = binomial(), data = d,
                     # lme4's default PIRLS tolerance (1e-7) leaves its deviance ~1e-5 off the
                     # Laplace value: converge the inner and outer iterations tightly
                     control = lme4::glmerControl(optimizer = "bobyqa", tolPwrss = 1e-14,
                                                  optCtrl = list(rhobeg = 0.01, rhoend = 1e-12,
                                                                 maxfun = 1e5)))
  emm <- emmeans(fit, ~ system)
  pr_resp <- pairs(emm, type = "response", adjust = "tukey")
  pr_diff <- pairs(regrid(emm), adjust = "tukey")
  list(
    file = file, formula = formula, fixef = unname(lme4::fixef(fit)),
    loglik = as.numeric(logLik(fit)),
    emm_link = emm_list(summary(emm), "emmean"), emm_vcov = unname(vcov(emm)),
    emm_response = emm_list(summary(emm, type = "response"), "prob"),
    pairs_response = con_list(summary(pr_resp), "odds.ratio", confint(pr_resp, adjust = "tukey")),
    pairs_difference = con_list(summary(pr_diff), "estimate", confint(pr_diff, adjust = "tukey"))
  )
}

res <- list(
  binomial_logit = glm_case("glm_p10.csv", "cbind(rel, 10 - rel) ~ topic + system",
                            binomial()),
  binomial_probit = glm_case("glm_p10.csv", "cbind(rel, 10 - rel) ~ topic + system",
                             binomial(link = "probit")),
  poisson_offset = glm_case("glm_counts.csv", "found ~ topic + system + offset(log_depth)",
                            poisson()),
  poisson_interaction = interaction_case("glm_counts.csv", "found ~ system * depth_level"),
  glmer_logit = glmer_case("glm_p10.csv", "cbind(rel, 10 - rel) ~ system + (1 | topic)")
)
res$meta <- list(R = R.version.string, emmeans = as.character(packageVersion("emmeans")),
                 car = as.character(packageVersion("car")),
                 lme4 = as.character(packageVersion("lme4")),
                 mvtnorm = as.character(packageVersion("mvtnorm")))
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = FALSE, na = "null"), "glm.json")
