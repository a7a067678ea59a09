# The report over all benchmarks: every table, figure and published-vs-reproduced summary.


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
        "{PY} report --out {output} --tables {input.tables} --figures {input.figures} "
        "--comparisons {input.comparisons} 2> {log}"
