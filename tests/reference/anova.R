# Reference values for irm.anova: type I (anova(lm())), type II and III (car::Anova).
# Run from tests/reference:  Rscript anova.R [OUTPUT]   (writes anova.json by default)
# Data: data/anova_*.csv from make_anova_data.py, and the TREC-8 ad hoc AP matrix read in place
# from ../../../shared/data/ir-scores/adhoc8_ap.csv (rows = topics 1..50, columns = 129 runs).
suppressPackageStartupMessages({
  library(car)
  library(jsonlite)
})
options(contrasts = c("contr.sum", "contr.poly"))

read_design <- function(name) {
  d <- read.csv(file.path("data", paste0(name, ".csv")), stringsAsFactors = FALSE)
  for (col in setdiff(names(d), "score")) d[[col]] <- factor(d[[col]])
  d
}

adhoc8 <- function() {
  m <- read.csv("../../../shared/data/ir-scores/adhoc8_ap.csv", check.names = FALSE)
  data.frame(
    topic = factor(rep(seq_len(nrow(m)), each = ncol(m))),
    system = factor(rep(colnames(m), times = nrow(m)), levels = colnames(m)),
    score = as.vector(t(as.matrix(m)))
  )
}

designs <- list(
  anova_balanced2 = list(data = read_design("anova_balanced2"),
                         formulas = c("score ~ topic + system", "score ~ topic * system")),
  anova_balanced3 = list(data = read_design("anova_balanced3"),
                         formulas = c("score ~ topic + system",
                                      "score ~ topic + system + shard",
                                      "score ~ topic + system + topic:system",
                                      "score ~ topic + system + shard + topic:system",
                                      "score ~ topic + system + shard + topic:system + system:shard",
                                      "score ~ topic + system + shard + topic:system + topic:shard + system:shard",
                                      # not hierarchical (margins missing): type I only in irmodels
                                      "score ~ shard + topic:system",
                                      "score ~ system + topic:system")),
  anova_missing_cells = list(data = read_design("anova_missing_cells"),
                             formulas = c("score ~ topic + system", "score ~ topic * system")),
  anova_unequal_reps = list(data = read_design("anova_unequal_reps"),
                            formulas = c("score ~ topic + system + shard",
                                         "score ~ topic * system + shard",
                                         "score ~ topic + system + shard + topic:system + topic:shard + system:shard",
                                         "score ~ topic * system * shard",
                                         "score ~ system + topic:system",
                                         "score ~ topic + system + topic:system:shard")),
  adhoc8_ap = list(data = adhoc8(), formulas = c("score ~ topic + system"))
)

table_of <- function(tab, type, n_obs) {
  rn <- trimws(rownames(tab))
  keep <- !(rn %in% c("(Intercept)", "Residuals"))
  res <- which(rn == "Residuals")
  df <- tab[keep, "Df"]
  df_res <- tab[res, "Df"]
  f2 <- tab[keep, "Sum Sq"] / tab[res, "Sum Sq"]
  # post hoc power at alpha = 0.05, noncentrality f2 * N
  power <- 1 - pf(qf(0.95, df, df_res), df, df_res, ncp = f2 * n_obs)
  list(
    type = type,
    terms = rn[keep],
    SS = unname(tab[keep, "Sum Sq"]),
    df = unname(tab[keep, "Df"]),
    F = unname(tab[keep, "F value"]),
    p = unname(tab[keep, "Pr(>F)"]),
    resid_SS = unname(tab[res, "Sum Sq"]),
    resid_df = unname(tab[res, "Df"]),
    power = unname(power)
  )
}

cases <- list()
for (dname in names(designs)) {
  d <- designs[[dname]]$data
  for (f in designs[[dname]]$formulas) {
    fit <- lm(as.formula(f), data = d)
    aliased <- any(is.na(coef(fit)))
    entries <- list(table_of(anova(fit), 1, nrow(d)))
    for (type in c(2, 3)) {
      tab <- tryCatch(Anova(fit, type = type), error = function(e) NULL)
      if (!is.null(tab)) entries[[length(entries) + 1]] <- table_of(tab, type, nrow(d))
    }
    aovfit <- aov(as.formula(f), data = d)
    cases[[length(cases) + 1]] <- list(
      design = dname, formula = f, n_obs = nrow(d), aliased_coefficients = aliased,
      tables = entries,
      aov_SS = unname(summary(aovfit)[[1]][["Sum Sq"]]),
      fitted_head = unname(head(fitted(fit), 5)),
      sigma = summary(fit)$sigma
    )
  }
}

# Tukey HSD on the TREC-8 MD1 fit (model error term): significant pairs and the top group
a8 <- designs$adhoc8_ap$data
hsd <- TukeyHSD(aov(score ~ topic + system, data = a8), "system")$system
means <- tapply(a8$score, a8$system, mean)
best <- names(means)[which.max(means)]
pair_names <- strsplit(rownames(hsd), "-", fixed = TRUE)
touches_best <- vapply(pair_names, function(p) best %in% p, logical(1))
not_diff <- vapply(pair_names[touches_best & hsd[, "p adj"] >= 0.05],
                   function(p) setdiff(p, best), character(1))
tukey <- list(design = "adhoc8_ap", formula = "score ~ topic + system", factor = "system",
              alpha = 0.05, n_pairs = nrow(hsd), n_significant = sum(hsd[, "p adj"] < 0.05),
              best = best, top_group = sort(c(best, not_diff)),
              critical_value = qtukey(0.95, nlevels(a8$system), df.residual(lm(score ~ topic + system, data = a8))))

out <- list(
  tukey = tukey,
  generated_by = "tests/reference/anova.R",
  r_version = R.version.string,
  packages = list(car = as.character(packageVersion("car")),
                  jsonlite = as.character(packageVersion("jsonlite"))),
  contrasts = "contr.sum, contr.poly",
  tolerance = list(SS = 1e-10, F = 1e-10, p = 1e-9, note = "relative; p absolute below 1e-300"),
  cases = cases
)
args <- commandArgs(trailingOnly = TRUE)
target <- if (length(args) >= 1) args[1] else "anova.json"
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), target)
cat("wrote", target, "with", length(cases), "cases\n")
