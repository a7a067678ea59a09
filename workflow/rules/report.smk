# The Markdown report over all benchmarks: every table, figure and published-vs-reproduced summary
# (results/report.md). The HTML report is Snakemake's own: `snakemake --report results/report.html`.


localrules:
    report,
    reproduction,


rule report:
    input:
        unpack(get_report_inputs),
    output:
        "results/report.md",
    log:
        "logs/report.log",
    conda:
        ENV
    shell:
        "python -m reprobench report --out {output:q} --tables {input.tables:q} --figures {input.figures:q} "
        "--comparisons {input.comparisons:q} 2> {log:q}"


# What was reproduced: per paper and table or figure, numbers compared, within, informative, and every miss with
# its reason. The cpu-scale run's file is committed as docs/REPRODUCTION.md.
rule reproduction:
    input:
        get_report_inputs(None)["comparisons"],
    output:
        "results/reproduction.md",
    log:
        "logs/reproduction.log",
    conda:
        ENV
    shell:
        "python -m reprobench reproduction --out {output:q} --comparisons {input:q} 2> {log:q}"
