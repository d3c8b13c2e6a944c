/**
 * gpumem_topo: shows which GPUs reach each other's memory and which NIC each
 * GPU should use, and why, as text, JSON or a Graphviz graph.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <uct/gpumem/driver/gpumem_drivers.h>

#include <ucs/debug/log_def.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef enum {
    GPUMEM_TOPO_TOOL_TEXT,
    GPUMEM_TOPO_TOOL_JSON,
    GPUMEM_TOPO_TOOL_DOT,
    GPUMEM_TOPO_TOOL_SVG
} gpumem_topo_tool_format_t;


/* What the command line asks for */
typedef struct gpumem_topo_tool_opts {
    gpumem_topo_params_t      params;
    const char                *save_facts_path;
    const char                *svg_path;
    gpumem_topo_tool_format_t format;
    unsigned                  flags;
    int                       emu;     /* The emu driver's machine */
    int                       verbose;
    int                       bind;    /* Only the NIC of each GPU */
} gpumem_topo_tool_opts_t;


/* Whether the library reported an error, so that the tool does not repeat
 * it with less detail */
static int gpumem_topo_tool_error_logged = 0;


static void gpumem_topo_tool_usage(FILE *stream)
{
    fprintf(stream,
            "Usage: " GPUMEM_TOPO_TOOL_NAME " [OPTION]...\n"
            "Show which GPUs map each other's memory, and which NIC each GPU "
            "should use.\n"
            "\n"
            "  --xml FILE         hwloc XML export to read (default: this "
            "machine)\n"
            "  --sysfs DIR        root of sysfs (default: /sys)\n"
            "  --facts FILE       apply facts saved by --save-facts\n"
            "  --save-facts FILE  save the sysfs facts of every device to "
            "FILE and exit\n"
            "  --json             print one JSON object\n"
            "  --dot              print a Graphviz digraph of the PCI tree "
            "and of every\n"
            "                     GPU pair, coloured by verdict\n"
            "  --svg FILE         draw that graph into FILE (SVG, by "
            "Graphviz's dot;\n"
            "                     each pair's reasons show on hover)\n"
            "  --bind             print the one NIC each GPU should use, "
            "distinct where there\n"
            "                     are enough, as the UCX_NET_DEVICES of a "
            "process on it\n"
            "                     (with --json, as JSON)\n"
            "  --verbose          every rule's reason of every verdict and "
            "NIC\n"
            "  --assume           count facts that cannot be read as "
            "favourable, and\n"
            "                     list each such assumption\n"
            "  --emu              the emu driver's machine (a software GPU):"
            " its built-in\n"
            "                     machine, or the GPUs of --xml, with the "
            "emulated facts\n"
            "  --help             print this help and exit\n"
            "\n"
            "Exit status: 0 on success, 1 when the topology cannot be "
            "loaded or saved,\n"
            "2 on a usage error.\n");
}

/*
 * UCS prints to stdout by default, which would mix the library's messages
 * into the JSON or Graphviz output: they all go to stderr here, under the
 * tool's name.
 */
static ucs_log_func_rc_t
gpumem_topo_tool_log(const char *file, unsigned line,
                     const char *function, ucs_log_level_t level,
                     const ucs_log_component_config_t *comp_conf,
                     const char *format, va_list ap)
{
    static const char prefix[] = "gpumem: ";
    char message[512];
    const char *text;

    /* Where the message comes from is for UCX's log, not for the user */
    (void)file;
    (void)line;
    (void)function;
    (void)comp_conf;

    vsnprintf(message, sizeof(message), format, ap);
    /* The prefix names the plugin among UCX's messages; here the tool's
     * name does */
    text = strncmp(message, prefix, strlen(prefix)) ? message :
           (message + strlen(prefix));

    if (level <= UCS_LOG_LEVEL_ERROR) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": %s\n", text);
        gpumem_topo_tool_error_logged = 1;
    } else {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": %s: %s\n",
                ucs_log_level_names[level], text);
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/* Parses the command line; returns -1 to go on, or the exit status */
static int gpumem_topo_tool_parse(int argc, char **argv,
                                  gpumem_topo_tool_opts_t *opts)
{
    enum {
        OPT_XML = 256,
        OPT_SYSFS,
        OPT_FACTS,
        OPT_SAVE_FACTS,
        OPT_JSON,
        OPT_DOT,
        OPT_SVG,
        OPT_VERBOSE,
        OPT_ASSUME,
        OPT_EMU,
        OPT_BIND,
        OPT_HELP
    };
    static const struct option long_opts[] = {
        {"xml",        required_argument, NULL, OPT_XML},
        {"sysfs",      required_argument, NULL, OPT_SYSFS},
        {"facts",      required_argument, NULL, OPT_FACTS},
        {"save-facts", required_argument, NULL, OPT_SAVE_FACTS},
        {"json",       no_argument,       NULL, OPT_JSON},
        {"dot",        no_argument,       NULL, OPT_DOT},
        {"svg",        required_argument, NULL, OPT_SVG},
        {"verbose",    no_argument,       NULL, OPT_VERBOSE},
        {"assume",     no_argument,       NULL, OPT_ASSUME},
        {"emu",        no_argument,       NULL, OPT_EMU},
        {"bind",       no_argument,       NULL, OPT_BIND},
        {"help",       no_argument,       NULL, OPT_HELP},
        {NULL,         0,                 NULL, 0}
    };
    int formats = 0;
    int c;

    memset(opts, 0, sizeof(*opts));
    opts->format = GPUMEM_TOPO_TOOL_TEXT;

    while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_XML:
            opts->params.xml_path = optarg;
            break;
        case OPT_SYSFS:
            opts->params.sysfs_root = optarg;
            break;
        case OPT_FACTS:
            opts->params.facts_path = optarg;
            break;
        case OPT_SAVE_FACTS:
            opts->save_facts_path = optarg;
            break;
        case OPT_JSON:
            opts->format = GPUMEM_TOPO_TOOL_JSON;
            ++formats;
            break;
        case OPT_DOT:
            opts->format = GPUMEM_TOPO_TOOL_DOT;
            ++formats;
            break;
        case OPT_SVG:
            if (optarg[0] == '\0') {
                fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": --svg needs a file "
                        "name\n");
                return GPUMEM_TOPO_TOOL_EXIT_USAGE;
            }
            opts->format   = GPUMEM_TOPO_TOOL_SVG;
            opts->svg_path = optarg;
            ++formats;
            break;
        case OPT_VERBOSE:
            opts->verbose = 1;
            break;
        case OPT_ASSUME:
            opts->flags |= GPUMEM_TOPO_ASSUME;
            break;
        case OPT_EMU:
            opts->emu = 1;
            break;
        case OPT_BIND:
            opts->bind = 1;
            break;
        case OPT_HELP:
            gpumem_topo_tool_usage(stdout);
            return 0;
        default:
            /* getopt_long() has named the option already */
            fprintf(stderr, "Try '" GPUMEM_TOPO_TOOL_NAME " --help'.\n");
            return GPUMEM_TOPO_TOOL_EXIT_USAGE;
        }
    }

    if (optind < argc) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": unexpected argument '%s'\n"
                "Try '" GPUMEM_TOPO_TOOL_NAME " --help'.\n", argv[optind]);
        return GPUMEM_TOPO_TOOL_EXIT_USAGE;
    }

    if (formats > 1) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": --json, --dot and --svg "
                "exclude each other\n");
        return GPUMEM_TOPO_TOOL_EXIT_USAGE;
    }

    if (opts->bind && (opts->format != GPUMEM_TOPO_TOOL_TEXT) &&
        (opts->format != GPUMEM_TOPO_TOOL_JSON)) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": --bind prints text or "
                "JSON, not a graph\n");
        return GPUMEM_TOPO_TOOL_EXIT_USAGE;
    }

    return -1;
}



/* The emulated machine's facts, which its driver sets on @a topo: the emu
 * row of the plugin's table of drivers, opened with its settings' zeros
 * (their defaults) and closed */
static ucs_status_t gpumem_topo_tool_emu_facts(const gpumem_driver_desc_t *emu,
                                               gpumem_topo_t *topo)
{
    gpumem_driver_t *driver;
    ucs_status_t status;
    void *config;

    config = calloc(1, (emu->config_entry != NULL) ?
                       emu->config_entry->size : 1);
    if (config == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = emu->open(config, topo, &driver);
    if (status == UCS_OK) {
        driver->ops->close(driver);
    }
    free(config);
    return status;
}

static int gpumem_topo_tool_load(const gpumem_topo_tool_opts_t *opts,
                                 gpumem_topo_t **topo_p)
{
    gpumem_topo_params_t params = opts->params;
    const gpumem_driver_desc_t *emu = NULL;
    ucs_status_t status;
    char why[512];

    if (opts->emu) {
        emu = gpumem_driver_find("emu");
        if ((emu == NULL) || (emu->open == NULL)) {
            if ((emu == NULL) || (emu->probe == NULL) ||
                (emu->probe(why, sizeof(why)) == UCS_OK)) {
                snprintf(why, sizeof(why), "this build has no emulator");
            }
            fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": --emu: %s\n", why);
            return GPUMEM_TOPO_TOOL_EXIT_FAIL;
        }
        if (params.xml_path == NULL) {
            params.xml_buffer = emu->builtin_topology;
        }
    }

    status = gpumem_topo_load(&params, topo_p);
    if ((status == UCS_OK) && (emu != NULL)) {
        status = gpumem_topo_tool_emu_facts(emu, *topo_p);
        if (status != UCS_OK) {
            gpumem_topo_destroy(*topo_p);
        }
    }
    if (status == UCS_OK) {
        return 0;
    }

    if (!gpumem_topo_tool_error_logged) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": cannot load the topology "
                "of %s%s%s: %s\n",
                (params.xml_path != NULL) ? params.xml_path :
                opts->emu ? "the emu driver's machine" : "this machine",
                (params.facts_path != NULL) ? " with facts " : "",
                (params.facts_path != NULL) ? params.facts_path : "",
                ucs_status_string(status));
    }
    return GPUMEM_TOPO_TOOL_EXIT_FAIL;
}

int main(int argc, char **argv)
{
    gpumem_topo_tool_report_t report;
    gpumem_topo_tool_opts_t opts;
    gpumem_topo_t *topo;
    int ret;

    ret = gpumem_topo_tool_parse(argc, argv, &opts);
    if (ret >= 0) {
        return ret;
    }

    ucs_log_push_handler(gpumem_topo_tool_log);

    ret = gpumem_topo_tool_load(&opts, &topo);
    if (ret != 0) {
        return ret;
    }

    if (opts.save_facts_path != NULL) {
        ret = (gpumem_topo_save_facts(topo, opts.save_facts_path) == UCS_OK) ?
              0 : GPUMEM_TOPO_TOOL_EXIT_FAIL;
        goto out_destroy;
    }

    if (opts.bind) {
        /* This machine's ports are as they are now; an export's were as
         * they were when it was saved, of a machine to plan for */
        ret = (gpumem_topo_tool_bind(topo,
                                     ((opts.params.xml_path == NULL) &&
                                      !opts.emu) ?
                                     GPUMEM_TOPO_BIND_ACTIVE : 0,
                                     opts.format == GPUMEM_TOPO_TOOL_JSON) ==
               UCS_OK) ? 0 : GPUMEM_TOPO_TOOL_EXIT_FAIL;
        goto out_flush;
    }

    report.xml_path   = opts.params.xml_path;
    report.sysfs_root = (opts.params.sysfs_root != NULL) ?
                        opts.params.sysfs_root : "/sys";
    report.facts_path = opts.params.facts_path;
    report.verbose    = opts.verbose;
    if (gpumem_topo_tool_report_init(topo, opts.flags, &report) != UCS_OK) {
        ret = GPUMEM_TOPO_TOOL_EXIT_FAIL;
        goto out_destroy;
    }

    switch (opts.format) {
    case GPUMEM_TOPO_TOOL_JSON:
        gpumem_topo_tool_json(&report);
        break;
    case GPUMEM_TOPO_TOOL_DOT:
        gpumem_topo_tool_dot(&report, stdout);
        break;
    case GPUMEM_TOPO_TOOL_SVG:
        ret = gpumem_topo_tool_svg(&report, opts.svg_path);
        break;
    default:
        gpumem_topo_tool_text(&report);
        break;
    }
    gpumem_topo_tool_report_cleanup(&report);

out_flush:
    /* A full disk or a closed pipe must not pass for a complete report */
    if ((fflush(stdout) != 0) || ferror(stdout)) {
        perror(GPUMEM_TOPO_TOOL_NAME ": cannot write the output");
        ret = GPUMEM_TOPO_TOOL_EXIT_FAIL;
    }

out_destroy:
    gpumem_topo_destroy(topo);
    return ret;
}