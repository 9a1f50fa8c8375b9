# Fixtures of sdcMicro 5.8.1's microaggregation (methods other than MDAV), for
# tests/test_microaggregation_methods.py. Run from the repository's root:
#
#   Rscript tests/data/sdcmicro_microaggregation/make_fixtures.R <sdcMicro checkout> > \
#     tests/data/sdcmicro_microaggregation/sdcmicro_5.8.1.json
#
# The checkout is sdcMicro's public repository (commit cf32510, version 5.8.1); its R functions
# microaggregationWORK (R/microaggregation.R) and mafastWORK (R/mafast.R) are read from it at run
# time, nothing of it is kept here. R 4.2.2, cluster 2.1.4, robustbase 0.95.0, data.table.
# Each case: the released matrix as text (every value "%.17g", rows joined by newlines), its
# md5; the column sums of the release; for the methods whose groups span all columns, each
# record's group (groups numbered by first row). Tarragona100 is Tarragona's first 100 rows
# (clara then draws the rows it leaves out of a sample). rmd draws random numbers (covMcd): its
# information loss SSE/SST (standardized by the original's sd, n - 1) over seeds 1..20 on
# Tarragona (on Census covMcd finds the covariance singular and sdcMicro stops).
suppressMessages({library(cluster); library(robustbase); library(data.table); library(jsonlite)})
src <- commandArgs(TRUE)[1]
take <- function(file, name) {
  for (e in parse(file)) if (is.call(e) && identical(e[[1]], as.name("<-")) &&
      identical(as.character(e[[2]]), name)) eval(e, globalenv())
}
take(file.path(src, "R", "microaggregation.R"), "microaggregationWORK")
take(file.path(src, "R", "mafast.R"), "mafastWORK")
mafast <- function(obj, variables=NULL, by=NULL, aggr=3, measure=mean)
  mafastWORK(x=obj, variables=variables, by=by, aggr=aggr, measure=measure)
text_of <- function(m) paste(apply(m, 1, function(r) paste(sprintf("%.17g", r), collapse=",")),
  collapse="\n")
md5 <- function(s) { f <- tempfile(); writeLines(s, f, sep=""); unname(tools::md5sum(f)) }
groups_of <- function(m) { key <- apply(m, 1, function(r) paste(sprintf("%.17g", r), collapse=","))
  match(key, unique(key)) - 1L }
sse_sst <- function(x, m) { s <- apply(x, 2, sd); z <- scale(x, center=colMeans(x), scale=s)
  zm <- scale(m, center=colMeans(x), scale=s); sum((z - zm)^2) / sum(z^2) }
tarragona <- read.csv("data/sdc/Tarragona.csv")
census <- read.csv("data/sdc/CASCrefmicrodata.csv")
td2 <- read.csv("tests/data/sdcmicro_microaggregation/testdata2.csv")
cases <- list(
  list(data="Tarragona", method="onedims", k=3, measure="mean", trim=0),
  list(data="Tarragona", method="onedims", k=5, measure="median", trim=0),
  list(data="Tarragona", method="onedims", k=4, measure="trim", trim=0.25),
  list(data="Tarragona", method="onedims", k=5, measure="onestep", trim=0),
  list(data="Tarragona", method="pca", k=3, measure="mean", trim=0),
  list(data="Tarragona", method="pca", k=5, measure="median", trim=0),
  list(data="Tarragona", method="pca", k=6, measure="trim", trim=0.2),
  list(data="Tarragona", method="pca", k=5, measure="onestep", trim=0),
  list(data="Census", method="pca", k=3, measure="mean", trim=0),
  list(data="Census", method="onedims", k=10, measure="mean", trim=0),
  list(data="Tarragona", method="clustpca", k=3, measure="mean", trim=0),
  list(data="Tarragona", method="influence", k=3, measure="mean", trim=0),
  list(data="Census", method="clustpca", k=5, measure="mean", trim=0),
  list(data="Census", method="influence", k=5, measure="mean", trim=0),
  list(data="testdata2", method="onedims", k=3, measure="mean", trim=0, strata="urbrur"),
  list(data="testdata2", method="pca", k=3, measure="median", trim=0, strata="urbrur"),
  list(data="testdata2", method="pca", k=3, measure="mean", trim=0, strata=c("urbrur", "sex")),
  list(data="testdata2", method="pca", k=3, measure="mean", trim=0, columns="income"),
  list(data="Tarragona100", method="clustpca", k=3, measure="median", trim=0),
  list(data="Tarragona100", method="influence", k=4, measure="onestep", trim=0),
  list(data="testdata2", method="clustpca", k=3, measure="mean", trim=0, strata="urbrur"),
  list(data="testdata2", method="influence", k=3, measure="trim", trim=0.34, strata="urbrur"))
frames <- list(Tarragona=tarragona, Census=census, testdata2=td2,
  Tarragona100=tarragona[1:100, ])
out <- list()
for (case in cases) {
  x <- frames[[case$data]]
  vars <- if (!is.null(case$columns)) case$columns else if (case$data == "testdata2")
    c("expend", "income", "savings") else colnames(x)
  res <- microaggregationWORK(x, variables=vars, aggr=case$k, method=case$method,
    measure=case$measure, trim=case$trim, strata_variables=case$strata)
  m <- as.matrix(res$mx[, vars, drop=FALSE])
  s <- text_of(m)
  entry <- c(case, list(columns=vars, md5=md5(s), column_sums=unname(colSums(m)),
    sse_sst=sse_sst(as.matrix(x[, vars]), m)))
  if (case$method != "onedims") entry$groups <- groups_of(m)
  if (case$data %in% c("testdata2", "Tarragona100")) entry$released <- s
  out[[length(out) + 1]] <- entry
}
rmd <- list()
for (d in c("Tarragona")) {
  x <- frames[[d]]
  losses <- sapply(1:20, function(seed) {
    set.seed(seed)
    res <- microaggregationWORK(x, variables=colnames(x), aggr=3, method="rmd")
    sse_sst(as.matrix(x), as.matrix(res$mx))
  })
  rmd[[d]] <- list(k=3, seeds=1:20, sse_sst=losses)
}
cat(toJSON(list(sdcmicro="5.8.1 (cf32510)", R=R.version.string,
  cluster=as.character(packageVersion("cluster")),
  robustbase=as.character(packageVersion("robustbase")), cases=out, rmd=rmd),
  auto_unbox=TRUE, digits=NA, pretty=FALSE))
