# Reference values for irmodels' linear mixed models (irmodels/models/mixed.py).
# Run from tests/reference/:  Rscript mixed.R   (writes mixed.json)
# Data: data/mixed_*.csv (python make_mixed_data.py) and ../../../shared/data/ir-scores/adhoc3_ap.csv
# Fits are made with tight optimiser tolerances so that the fixture holds the optimum itself
# (to ~1e-9) rather than the optimiser's default stopping point.
suppressPackageStartupMessages({
  library(lme4); library(lmerTest); library(nlme); library(jsonlite)
})

ctrl <- lmerControl(optimizer = "bobyqa",
                    optCtrl = list(rhobeg = 0.2, rhoend = 1e-12, maxfun = 1e5),
                    check.conv.singular = "ignore")

read <- function(file) {
  d <- read.csv(file, colClasses = "character")
  d$score <- as.numeric(d$score)
  for (f in intersect(c("topic", "system", "shard"), names(d))) d[[f]] <- factor(d[[f]])
  d
}

adhoc3 <- function() {
  w <- read.csv("../../../shared/data/ir-scores/adhoc3_ap.csv", check.names = FALSE)
  data.frame(topic = factor(rep(seq_len(nrow(w)), times = ncol(w))),
             system = factor(rep(names(w), each = nrow(w)), levels = names(w)),
             score = unlist(w, use.names = FALSE))
}

lmer_entry <- function(name, dataset, formula, d, method) {
  m <- lmerTest::lmer(as.formula(formula), data = d, REML = (method == "REML"), control = ctrl)
  vc <- as.data.frame(VarCorr(m))
  co <- summary(m)$coefficients
  list(name = name, package = "lme4", data = dataset, formula = formula, method = method,
       nobs = nobs(m), logLik = as.numeric(logLik(m)), df = attr(logLik(m), "df"),
       AIC = AIC(m), BIC = BIC(m), deviance = as.numeric(-2 * logLik(m)),
       components = setNames(as.list(vc$vcov), ifelse(is.na(vc$grp), "Residual", vc$grp)),
       fixed = list(names = rownames(co), estimate = unname(co[, "Estimate"]),
                    se = unname(co[, "Std. Error"]), df = unname(co[, "df"]),
                    t = unname(co[, "t value"]), p = unname(co[, "Pr(>|t|)"])),
       theta = unname(getME(m, "theta")), singular = isSingular(m),
       ranef = lapply(ranef(m), function(r) list(levels = rownames(r), blup = r[[1]])))
}

datasets <- list(
  crossed = read("data/mixed_crossed.csv"),
  crossed_unbalanced = read("data/mixed_crossed_unbalanced.csv"),
  shards = read("data/mixed_shards.csv"),
  shards_unbalanced = read("data/mixed_shards_unbalanced.csv"),
  hetero = read("data/mixed_hetero.csv"),
  adhoc3 = adhoc3()
)
files <- c(crossed = "data/mixed_crossed.csv", crossed_unbalanced = "data/mixed_crossed_unbalanced.csv",
           shards = "data/mixed_shards.csv", shards_unbalanced = "data/mixed_shards_unbalanced.csv",
           hetero = "data/mixed_hetero.csv",
           adhoc3 = "../../../shared/data/ir-scores/adhoc3_ap.csv")

models <- list(
  list(data = "crossed", formula = "score ~ system + (1|topic)"),
  list(data = "crossed", formula = "score ~ (1|system) + (1|topic)"),
  list(data = "crossed", formula = "score ~ system + (1|topic) + (1|topic:system)"),
  list(data = "crossed_unbalanced", formula = "score ~ system + (1|topic)"),
  list(data = "crossed_unbalanced", formula = "score ~ (1|system) + (1|topic)"),
  list(data = "crossed_unbalanced", formula = "score ~ system + (1|topic) + (1|topic:system)"),
  list(data = "shards", formula = "score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)"),
  list(data = "shards_unbalanced", formula = "score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)"),
  list(data = "hetero", formula = "score ~ system + (1|topic) + (1|topic:system)"),
  list(data = "adhoc3", formula = "score ~ (1|system) + (1|topic)")
)

lmer_fits <- list()
for (mod in models) for (method in c("REML", "ML")) {
  name <- paste(mod$data, method, mod$formula, sep = " | ")
  lmer_fits[[length(lmer_fits) + 1]] <- lmer_entry(name, mod$data, mod$formula,
                                                   datasets[[mod$data]], method)
}

# ANOVA (G-study) components of the TREC-3 matrix, for the closed-form check.
a3 <- datasets$adhoc3
aov3 <- anova(lm(score ~ system + topic, data = a3))
ms <- aov3[["Mean Sq"]]; names(ms) <- rownames(aov3)
nt <- nlevels(a3$topic); ns <- nlevels(a3$system)
gstudy <- list(system = (ms[["system"]] - ms[["Residuals"]]) / nt,
               topic = (ms[["topic"]] - ms[["Residuals"]]) / ns,
               Residual = ms[["Residuals"]])

# Likelihood-ratio tests with lme4's anova (REML fits are refitted by ML).
cr <- datasets$crossed
m_t <- lmer(score ~ system + (1|topic), data = cr, control = ctrl)
m_ts <- lmer(score ~ system + (1|topic) + (1|topic:system), data = cr, control = ctrl)
m_0 <- lmer(score ~ 1 + (1|topic), data = cr, control = ctrl)
an <- as.data.frame(anova(m_0, m_t, m_ts))
lme4_anova <- list(models = c("score ~ 1 + (1|topic)", "score ~ system + (1|topic)",
                              "score ~ system + (1|topic) + (1|topic:system)"),
                   npar = an$npar, logLik = an$logLik, AIC = an$AIC, BIC = an$BIC,
                   statistic = an$Chisq, df = an[["Df"]], p = an[["Pr(>Chisq)"]])

# nlme: homoscedastic and heteroscedastic (varIdent by topic*system) fits on the replicated data.
he <- datasets$hetero
lctrl <- lmeControl(maxIter = 500, msMaxIter = 500, niterEM = 100, tolerance = 1e-12,
                    msTol = 1e-14, msVerbose = FALSE, returnObject = TRUE)
nlme_entry <- function(m, name, hetero) {
  vc <- VarCorr(m)
  tt <- summary(m)$tTable
  out <- list(name = name, package = "nlme", data = "hetero", method = m$method,
              nobs = nobs(m), logLik = as.numeric(logLik(m)), df = attr(logLik(m), "df"),
              AIC = AIC(m), BIC = BIC(m),
              components = list(topic = as.numeric(vc[2, "Variance"]),
                                `topic:system` = as.numeric(vc[4, "Variance"]),
                                Residual = m$sigma^2),
              fixed = list(names = rownames(tt), estimate = unname(tt[, "Value"]),
                           se = unname(tt[, "Std.Error"]), df = unname(tt[, "DF"])))
  if (hetero) {
    r <- coef(m$modelStruct$varStruct, unconstrained = FALSE, allCoef = TRUE)
    out$ratios <- list(names = names(r), values = unname(r))
  }
  out
}
fits_nlme <- list()
for (method in c("REML", "ML")) {
  h0 <- lme(score ~ system, random = ~1 | topic/system, data = he, method = method, control = lctrl)
  h1 <- lme(score ~ system, random = ~1 | topic/system, data = he, method = method, control = lctrl,
            weights = varIdent(form = ~1 | topic * system))
  a <- anova(h0, h1)
  fits_nlme[[method]] <- list(
    homo = nlme_entry(h0, paste("hetero", method, "homoscedastic", sep = " | "), FALSE),
    hetero = nlme_entry(h1, paste("hetero", method, "varIdent(topic*system)", sep = " | "), TRUE),
    anova = list(df = a$df, logLik = a$logLik, AIC = a$AIC, BIC = a$BIC,
                 statistic = a$L.Ratio[2], p = a[["p-value"]][2]))
}

out <- list(
  generated_by = "tests/reference/mixed.R",
  R = R.version.string,
  packages = list(lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  nlme = as.character(packageVersion("nlme")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  tolerance = list(components = 1e-6, fixed = 1e-6, se = 1e-6, loglik = 1e-7, df = 1e-4,
                   ratios = 1e-5),
  files = as.list(files),
  lmer = lmer_fits,
  gstudy_adhoc3 = gstudy,
  lme4_anova = lme4_anova,
  nlme = fits_nlme
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed.json")
cat("wrote mixed.json\n")
