# Reference values for numeric covariates in irm.anova (lm + anova / car::Anova) and irm.mixed (lmer).
# Run from tests/reference/:  Rscript covariates.R   (writes covariates.json)
# Data: data/covariates.csv (python make_covariates_data.py). topic and system are factors,
# qlen and depth numeric (uncentred). Sum-to-zero contrasts for the ANOVA tables (type III needs
# them); lmer keeps R's default treatment contrasts.
suppressPackageStartupMessages({
  library(car); library(lme4); library(lmerTest); library(emmeans); library(jsonlite)
})

d <- read.csv("data/covariates.csv")
d$topic <- factor(d$topic)
d$system <- factor(d$system)

anova_formulas <- c(
  "score ~ system + qlen",
  "score ~ topic + system + depth",
  "score ~ system + depth + system:depth",
  "score ~ system + qlen + depth + qlen:depth",
  "score ~ topic + system + system:depth"
)

tab <- function(a, terms) {
  a <- as.data.frame(a)
  a <- a[terms, , drop = FALSE]
  list(terms = terms, SS = unname(a[["Sum Sq"]]), df = unname(a[["Df"]]),
       F = unname(a[["F value"]]), p = unname(a[["Pr(>F)"]]))
}

anova_entries <- lapply(anova_formulas, function(f) {
  options(contrasts = c("contr.sum", "contr.poly"))
  m <- lm(as.formula(f), data = d)
  terms <- attr(terms(m), "term.labels")
  a1 <- anova(m)
  out <- list(formula = f, nobs = nobs(m), df_resid = m$df.residual,
              ss_resid = sum(residuals(m)^2), coef_count = m$rank,
              fitted_head = unname(fitted(m)[1:10]),
              type1 = tab(a1, terms))
  hier <- f != "score ~ topic + system + system:depth"
  if (hier) {
    out$type2 <- tab(Anova(m, type = 2), terms)
    out$type3 <- tab(Anova(m, type = 3), terms)
  }
  options(contrasts = c("contr.treatment", "contr.poly"))
  out
})

ctrl <- lmerControl(optimizer = "bobyqa",
                    optCtrl = list(rhobeg = 0.2, rhoend = 1e-12, maxfun = 1e5),
                    check.conv.singular = "ignore")

mixed_formulas <- c(
  "score ~ system + qlen + (1|topic)",
  "score ~ system + depth + system:depth + (1|topic)",
  "score ~ system + qlen + depth + qlen:depth + (1|topic)"
)

mixed_entries <- list()
for (f in mixed_formulas) for (method in c("REML", "ML")) {
  m <- lmerTest::lmer(as.formula(f), data = d, REML = (method == "REML"), control = ctrl)
  vc <- as.data.frame(VarCorr(m))
  co <- summary(m)$coefficients
  emm <- as.data.frame(emmeans(m, ~ system, lmer.df = "satterthwaite"))
  mixed_entries[[length(mixed_entries) + 1]] <- list(
    emmeans = list(level = as.character(emm$system), mean = emm$emmean, se = emm$SE),
    formula = f, method = method, nobs = nobs(m), logLik = as.numeric(logLik(m)),
    components = setNames(as.list(vc$vcov), ifelse(is.na(vc$grp), "Residual", vc$grp)),
    fixed = list(names = rownames(co), estimate = unname(co[, "Estimate"]),
                 se = unname(co[, "Std. Error"]), df = unname(co[, "df"])))
}

out <- list(
  generated_by = "tests/reference/covariates.R",
  R = R.version.string,
  packages = list(car = as.character(packageVersion("car")),
                  lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  emmeans = as.character(packageVersion("emmeans"))),
  data = "data/covariates.csv",
  anova = anova_entries,
  mixed = mixed_entries
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "covariates.json")
