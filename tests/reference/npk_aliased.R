# Reference values for irm.anova(..., aliased="drop"): R's ?npk example yield ~ block + N*P*K, whose
# N:P:K is aliased with block (lm reports its coefficient as NA). anova(lm()) (type I) omits the
# aliased term; car::Anova(type = 2) gives it 0 df; car::Anova(type = 3) refuses.
# Run from tests/reference:  Rscript npk_aliased.R [OUTPUT]   (writes npk_aliased.json by default)
# Writes data/npk.csv (R's datasets::npk) too.
suppressPackageStartupMessages({
  library(car)
  library(emmeans)
  library(jsonlite)
})
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args)) args[[1]] else "npk_aliased.json"
write.csv(npk, file.path("data", "npk.csv"), row.names = FALSE)
d <- read.csv(file.path("data", "npk.csv"))
for (col in c("block", "N", "P", "K")) d[[col]] <- factor(d[[col]])
fit <- lm(yield ~ block + N * P * K, d)
tab <- function(a, ss, df, f, p) {
  terms <- setdiff(rownames(a), "Residuals")
  terms <- terms[a[terms, df] > 0]
  lapply(setNames(terms, terms), function(t) list(
    SS = a[t, ss], df = a[t, df], MS = a[t, ss] / a[t, df], F = a[t, f], p = a[t, p]))
}
a1 <- anova(fit)
em <- as.data.frame(summary(emmeans(fit, ~ N * P)))  # estimable; emmeans(fit, ~ block) is nonEst
em_block <- as.data.frame(summary(emmeans(fit, ~ block)))
a2 <- car::Anova(fit, type = 2)
res <- list(
  r_version = R.version.string,
  car_version = as.character(packageVersion("car")),
  emmeans_version = as.character(packageVersion("emmeans")),
  formula = "yield ~ block + N*P*K",
  aliased_coefficients = names(coef(fit))[is.na(coef(fit))],
  type1 = list(terms = tab(a1, "Sum Sq", "Df", "F value", "Pr(>F)"),
               rownames = rownames(a1),
               SS_resid = a1["Residuals", "Sum Sq"], df_resid = a1["Residuals", "Df"]),
  type2 = list(terms = tab(a2, "Sum Sq", "Df", "F value", "Pr(>F)"),
               rownames = rownames(a2),
               SS_resid = a2["Residuals", "Sum Sq"], df_resid = a2["Residuals", "Df"]),
  emmeans_NP = list(N = as.character(em$N), P = as.character(em$P), emmean = em$emmean,
                    SE = em$SE, df = em$df),
  emmeans_block_estimable = any(is.finite(em_block$emmean)),
  type3_refused = inherits(try(car::Anova(lm(yield ~ block + N * P * K, d,
                                              contrasts = list(block = "contr.sum", N = "contr.sum",
                                                               P = "contr.sum", K = "contr.sum")),
                                           type = 3), silent = TRUE), "try-error")
)
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA, pretty = TRUE), out)
