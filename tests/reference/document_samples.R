# Reference values for irmodels.studies.document_samples.compare_tests (mixed-model p-values).
# Run from tests/reference/:  python make_document_samples_data.py && Rscript document_samples.R
# Data: data/document_samples.csv (simulated logit(AP), C = 10 samples per topic and system) and
# data/document_samples_pairs.csv (the pairs fitted). Writes document_samples.json.
# Per pair, topics where either system's simulated y never varies are excluded (as compare_tests
# does), then with nlme (REML):
#   m_homo   <- lme(y ~ system, random = ~1|topic/system)
#   m_hetero <- lme(y ~ system, random = ~1|topic/system, weights = varIdent(form = ~1|topic*system))
# and the system coefficient's estimate, SE, t, df, p (nlme's own "containment" df), logLik and
# anova(m_homo, m_hetero). For the homoscedastic model, lmerTest's Satterthwaite df and p too.
# Tight optimiser tolerances: the fixture holds the optimum, not a default stopping point.
suppressPackageStartupMessages({library(nlme); library(lme4); library(lmerTest); library(jsonlite)})

d <- read.csv("data/document_samples.csv", colClasses = c(topic = "character", system = "character"))
pairs <- read.csv("data/document_samples_pairs.csv", colClasses = "character")
lctrl <- lmeControl(maxIter = 500, msMaxIter = 500, niterEM = 100, tolerance = 1e-12,
                    msTol = 1e-14, msVerbose = FALSE, returnObject = TRUE)
ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhobeg = 0.2, rhoend = 1e-12, maxfun = 1e5),
                    check.conv.singular = "ignore")

coef_entry <- function(m) {
  tt <- summary(m)$tTable
  row <- grep("^system", rownames(tt))
  list(name = rownames(tt)[row], estimate = unname(tt[row, "Value"]), se = unname(tt[row, "Std.Error"]),
       df = unname(tt[row, "DF"]), t = unname(tt[row, "t-value"]), p = unname(tt[row, "p-value"]),
       logLik = as.numeric(logLik(m)), npar = attr(logLik(m), "df"))
}

fits <- list()
for (i in seq_len(nrow(pairs))) {
  a <- pairs$a[i]; b <- pairs$b[i]
  p <- d[d$system %in% c(a, b), ]
  sds <- aggregate(y ~ topic + system, data = p, FUN = sd)
  excluded <- sort(unique(sds$topic[!(sds$y > 0)]))
  p <- p[!(p$topic %in% excluded), ]
  p$system <- factor(p$system, levels = c(a, b))
  p$topic <- factor(p$topic)
  h0 <- lme(y ~ system, random = ~1 | topic/system, data = p, method = "REML", control = lctrl)
  h1 <- lme(y ~ system, random = ~1 | topic/system, data = p, method = "REML", control = lctrl,
            weights = varIdent(form = ~1 | topic * system))
  an <- anova(h0, h1)
  lm0 <- lmerTest::lmer(y ~ system + (1 | topic) + (1 | topic:system), data = p, REML = TRUE,
                        control = ctrl)
  co <- summary(lm0)$coefficients
  fits[[i]] <- list(
    a = a, b = b, n_obs = nrow(p), n_topics = nlevels(p$topic),
    excluded_topics = as.list(excluded),
    homo = coef_entry(h0), hetero = coef_entry(h1),
    anova = list(statistic = an$L.Ratio[2], p = an[["p-value"]][2], df = an$df[2] - an$df[1]),
    satterthwaite_homo = list(df = unname(co[2, "df"]), t = unname(co[2, "t value"]),
                              p = unname(co[2, "Pr(>|t|)"]), logLik = as.numeric(logLik(lm0)))
  )
}

out <- list(
  generated_by = "tests/reference/document_samples.R",
  R = R.version.string,
  packages = list(nlme = as.character(packageVersion("nlme")),
                  lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  data = "data/document_samples.csv",
  # relative tolerances; the heteroscedastic REML surface is flat: nlme stops ~1e-8 below the
  # optimum in logLik, which moves the estimate, SE and p by up to ~2e-5 relative
  tolerance = list(loglik = 1e-8, homo = 1e-8, hetero = 5e-5, lrt_statistic = 1e-8, lrt_p = 1e-6),
  pairs = fits
)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), "document_samples.json")
