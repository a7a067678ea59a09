# The Markdown report over all benchmarks: every table, figure and published-vs-reproduced summary
# (results/report.md). The HTML report is Snakemake's own: `snakemake --report results/report.html`.


localrules:
    report,


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
