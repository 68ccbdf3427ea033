# Reference values for irmodels.inference.gtheory (generalizability theory).
# Run from tests/reference/:  Rscript gtheory.R   -> gtheory.json
#
# Independent route: mean squares from aov(), variance components by solving the expected
# mean squares (random model), D-study coefficients, Feldt (1965) interval for E rho^2 and the
# Arteaga, Jeyaratnam & Franklin (1982) interval for Phi as given in Brennan (2001), sec. 6.1.
library(jsonlite)

shared <- file.path("..", "..", "..", "shared", "data")

two_way <- function(wide) {
  # wide: rows = topics, columns = systems
  n_t <- nrow(wide); n_s <- ncol(wide)
  long <- data.frame(
    score = as.vector(as.matrix(wide)),
    topic = factor(rep(seq_len(n_t), times = n_s)),
    system = factor(rep(seq_len(n_s), each = n_t))
  )
  tab <- summary(aov(score ~ system + topic, data = long))[[1]]
  ms_s <- tab["system     ", "Mean Sq"]; ms_t <- tab["topic      ", "Mean Sq"]
  ms_e <- tab["Residuals  ", "Mean Sq"]
  list(n_s = n_s, n_t = n_t, ms_s = ms_s, ms_t = ms_t, ms_e = ms_e,
       var_s = (ms_s - ms_e) / n_t, var_t = (ms_t - ms_e) / n_s, var_e = ms_e)
}

dstudy <- function(g, topics, a_low, a_up) {
  # a_low: probability in the lower tail (NA = no lower bound), a_up: in the upper tail
  df_s <- g$n_s - 1; df_t <- g$n_t - 1; df_e <- df_s * df_t
  Erho2 <- g$var_s / (g$var_s + g$var_e / topics)
  Phi <- g$var_s / (g$var_s + (g$var_t + g$var_e) / topics)
  # Feldt: F = MS_s / MS_e ~ (1 + n rho-ratio) F(df_s, df_e)
  feldt <- function(p) {
    r <- (g$ms_s / (g$ms_e * qf(p, df_s, df_e)) - 1) / g$n_t   # var_s / var_e, one topic
    topics * r / (1 + topics * r)
  }
  # Arteaga, Jeyaratnam & Franklin, Brennan (2001) eq. 6.14-6.15
  ajf <- function(p) {
    F1 <- qf(p, df_s, Inf); F2 <- qf(p, df_s, df_e); F3 <- qf(p, df_s, df_t)
    num <- g$ms_s^2 - F1 * g$ms_s * g$ms_e + (F1 - F2) * F2 * g$ms_e^2
    den <- (g$n_s - 1) * F1 * g$ms_s * g$ms_e + F3 * g$ms_s * g$ms_t
    L <- num / den
    phi1 <- g$n_s * L / (g$n_s * L + g$n_t)   # Phi for one topic
    topics * phi1 / (1 + (topics - 1) * phi1)
  }
  lower_e <- if (is.na(a_low)) rep(0, length(topics)) else feldt(1 - a_low)
  upper_e <- if (is.na(a_up)) rep(1, length(topics)) else feldt(a_up)
  lower_p <- if (is.na(a_low)) rep(0, length(topics)) else ajf(1 - a_low)
  upper_p <- if (is.na(a_up)) rep(1, length(topics)) else ajf(a_up)
  list(topics = topics, Erho2 = Erho2, Erho2_lower = lower_e, Erho2_upper = upper_e,
       Phi = Phi, Phi_lower = lower_p, Phi_upper = upper_p)
}

needed <- function(g, target) {
  list(target = target,
       Erho2 = ceiling(target * g$var_e / (g$var_s * (1 - target))),
       Phi = ceiling(target * (g$var_t + g$var_e) / (g$var_s * (1 - target))))
}

gcase <- function(wide, topics) {
  g <- two_way(wide)
  list(
    n_systems = g$n_s, n_topics = g$n_t,
    ms = list(system = g$ms_s, topic = g$ms_t, Residual = g$ms_e),
    var = list(system = g$var_s, topic = g$var_t, Residual = g$var_e),
    phi = g$var_s / (g$var_s + g$var_t + g$var_e),
    rho_I = g$var_s / (g$var_s + g$var_e),
    dstudy = list(
      two_0.05 = dstudy(g, topics, 0.025, 0.025),
      two_0.2 = dstudy(g, topics, 0.10, 0.10),
      lower_0.05 = dstudy(g, topics, 0.05, NA),
      upper_0.05 = dstudy(g, topics, NA, 0.05)
    ),
    needed = list(needed(g, 0.8), needed(g, 0.9), needed(g, 0.95))
  )
}

brennan <- read.csv(file.path(shared, "textbook", "brennan2001_table3-2.csv"))
adhoc3 <- read.csv(file.path(shared, "ir-scores", "adhoc3_ap.csv"))

# three facets: system x topic x shard, all random, fully crossed, one score per cell
sh <- read.csv("gtheory_shards.csv", stringsAsFactors = TRUE)
tab <- summary(aov(score ~ (system + topic + shard)^2, data = sh))[[1]]
rownames(tab) <- trimws(rownames(tab))
ms <- setNames(tab[, "Mean Sq"], rownames(tab))
ns <- nlevels(sh$system); nt <- nlevels(sh$topic); nh <- nlevels(sh$shard)
v_e <- ms[["Residuals"]]
v_st <- (ms[["system:topic"]] - v_e) / nh
v_sh <- (ms[["system:shard"]] - v_e) / nt
v_th <- (ms[["topic:shard"]] - v_e) / ns
v_s <- (ms[["system"]] - ms[["system:topic"]] - ms[["system:shard"]] + v_e) / (nt * nh)
v_t <- (ms[["topic"]] - ms[["system:topic"]] - ms[["topic:shard"]] + v_e) / (ns * nh)
v_h <- (ms[["shard"]] - ms[["system:shard"]] - ms[["topic:shard"]] + v_e) / (ns * nt)
grid <- expand.grid(topics = c(10, 50, 100), shards = c(1, 4, 10))
rel <- v_st / grid$topics + v_sh / grid$shards + v_e / (grid$topics * grid$shards)
abs_ <- rel + v_t / grid$topics + v_h / grid$shards + v_th / (grid$topics * grid$shards)
three <- list(
  ms = as.list(ms),
  var = list(system = v_s, topic = v_t, shard = v_h, "topic:system" = v_st,
             "system:shard" = v_sh, "topic:shard" = v_th, Residual = v_e),
  dstudy = list(topics = grid$topics, shards = grid$shards,
                Erho2 = v_s / (v_s + rel), Phi = v_s / (v_s + abs_))
)

out <- list(
  R = R.version.string,
  packages = list(jsonlite = as.character(packageVersion("jsonlite")),
                  stats = as.character(packageVersion("stats"))),
  tolerance = 1e-9,
  brennan = gcase(brennan, c(1, 5, 10, 12, 20, 50)),
  adhoc3 = gcase(adhoc3, c(10, 25, 50, 100, 200)),
  shards = three
)
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "gtheory.json")
