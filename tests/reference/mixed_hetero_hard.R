# Reference values for a heteroscedastic (varIdent) fit that once failed in irmodels
# (LinAlgError: an extreme first stratum drove the relative parameters to magnitudes where the
# Cholesky factor lost positive definiteness). Data: data/mixed_hetero_hard.csv, one pair of
# systems of the document-sample study (trec8 demo collection, 40 runs, bootstrap model, seed 0,
# logit AP; the topics where a system never varies are already left out).
# Run from tests/reference/:  Rscript mixed_hetero_hard.R   (writes mixed_hetero_hard.json)
suppressPackageStartupMessages({ library(nlme); library(jsonlite) })

d <- read.csv("data/mixed_hetero_hard.csv", colClasses = "character")
d$score <- as.numeric(d$score)
d$topic <- factor(d$topic)
d$system <- factor(d$system)
lctrl <- lmeControl(maxIter = 500, msMaxIter = 500, niterEM = 100, tolerance = 1e-12,
                    msTol = 1e-14, msVerbose = FALSE, returnObject = TRUE)
entry <- function(m, hetero) {
  vc <- VarCorr(m)
  tt <- summary(m)$tTable
  out <- list(method = m$method, nobs = nobs(m), logLik = as.numeric(logLik(m)),
              df = attr(logLik(m), "df"), AIC = AIC(m), BIC = BIC(m),
              components = list(topic = as.numeric(vc[2, "Variance"]),
                                `topic:system` = as.numeric(vc[4, "Variance"]),
                                Residual = m$sigma^2),
              fixed = list(names = rownames(tt), estimate = unname(tt[, "Value"]),
                           se = unname(tt[, "Std.Error"]), df = unname(tt[, "DF"]),
                           p = unname(tt[, "p-value"])))
  if (hetero) {
    r <- coef(m$modelStruct$varStruct, unconstrained = FALSE, allCoef = TRUE)
    out$ratios <- list(names = names(r), values = unname(r))
  }
  out
}
h0 <- lme(score ~ system, random = ~1 | topic/system, data = d, method = "REML", control = lctrl)
h1 <- lme(score ~ system, random = ~1 | topic/system, data = d, method = "REML", control = lctrl,
          weights = varIdent(form = ~1 | topic * system))
a <- anova(h0, h1)
out <- list(
  generated_by = "tests/reference/mixed_hetero_hard.R",
  R = R.version.string,
  packages = list(nlme = as.character(packageVersion("nlme")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  file = "data/mixed_hetero_hard.csv",
  homo = entry(h0, FALSE),
  hetero = entry(h1, TRUE),
  anova = list(df = a$df, logLik = a$logLik, AIC = a$AIC, BIC = a$BIC,
               statistic = a$L.Ratio[2], p = a[["p-value"]][2])
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "mixed_hetero_hard.json")
cat("wrote mixed_hetero_hard.json\n")
