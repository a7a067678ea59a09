# The Markdown report over all benchmarks: every table, figure and published-vs-reproduced summary
# (results/report.md). The HTML report is Snakemake's own: `snakemake --report results/report.html`.


localrules:
    report,
    reproduction,


# "Your model" (core.yours): for each benchmark whose config names a user's class, its compare stage's rows
# (results/<key>/yours.csv) as a table beside the paper's, in results/report.md and the HTML report.
for key in benchmarks.KEYS:
    if yours_table(key):

        rule:
            name:
                f"{key}_yours"
            input:
                yours.rows_file(f"results/{key}"),
            output:
                **reported(key, yours_table(key)),
            log:
                yours_table(key).log,
            localrule: True
            conda:
                ENV
            params:
                caption=yours_table(key).caption,
            shell:
                "python -m reprobench yours --rows {input:q} --out {output:q} 2> {log:q}"


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
