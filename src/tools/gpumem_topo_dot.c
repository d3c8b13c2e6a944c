/**
 * gpumem_topo: the PCI tree and every GPU pair's verdict as a Graphviz
 * graph, and as an SVG drawing of it rendered by dot(1).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gpumem_topo_tool.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


extern char **environ;


/* Text inside a quoted DOT string: names come from the topology file */
static void gpumem_topo_tool_dot_text(FILE *out, const char *str)
{
    for (; *str != '\0'; ++str) {
        if ((*str == '"') || (*str == '\\')) {
            fputc('\\', out);
        }
        fputc(((unsigned char)*str < 0x20) ? ' ' : *str, out);
    }
}

static void gpumem_topo_tool_dot_id(FILE *out, const gpumem_pci_addr_t *addr)
{
    fprintf(out, "pci_%04x_%02x_%02x_%x", addr->domain, addr->bus, addr->dev,
           addr->fn);
}

/* Whether a bridge or host bridge appears in an earlier device's path, and
 * so was drawn already (a machine has few devices) */
static int gpumem_topo_tool_dot_drawn(const gpumem_topo_t *topo, unsigned dev,
                                      unsigned hop, int host_bridge)
{
    const gpumem_topo_reach_t *reach = &topo->devs[dev].reach;
    const gpumem_topo_reach_t *other;
    unsigned d, h;

    for (d = 0; d < dev; ++d) {
        other = &topo->devs[d].reach;
        if (host_bridge) {
            if ((other->hb_domain == reach->hb_domain) &&
                (other->hb_bus == reach->hb_bus)) {
                return 1;
            }
            continue;
        }
        for (h = 0; h < other->path_len; ++h) {
            if (gpumem_pci_addr_equal(&other->path[h].addr,
                                      &reach->path[hop].addr)) {
                return 1;
            }
        }
    }
    return 0;
}

/* A device, the bridges above it and the host bridge, each drawn once */
static void gpumem_topo_tool_dot_dev(FILE *out, const gpumem_topo_t *topo,
                                     unsigned dev)
{
    const gpumem_topo_dev_t *d       = &topo->devs[dev];
    const gpumem_topo_reach_t *reach = &d->reach;
    char pci[GPUMEM_TOPO_PCI_STR_MAX];
    unsigned hop;

    fprintf(out, "    ");
    gpumem_topo_tool_dot_id(out, &reach->addr);
    fprintf(out, " [shape=box, style=filled, fillcolor=%s, label=\"",
           (d->type == GPUMEM_TOPO_DEV_GPU) ? "palegreen" : "lightblue");
    gpumem_topo_tool_dot_text(out, d->name);
    fprintf(out, "\\n%s\\n%04x:%04x\"];\n", gpumem_topo_tool_pci(d, pci),
           d->vendor, d->device);

    for (hop = 0; hop < reach->path_len; ++hop) {
        if (gpumem_topo_tool_dot_drawn(topo, dev, hop, 0)) {
            continue;
        }
        fprintf(out, "    ");
        gpumem_topo_tool_dot_id(out, &reach->path[hop].addr);
        fprintf(out, " [shape=ellipse, label=\"bridge\\n%s\"];\n",
               gpumem_pci_addr_str(&reach->path[hop].addr, pci, sizeof(pci)));
    }

    if (!gpumem_topo_tool_dot_drawn(topo, dev, 0, 1)) {
        fprintf(out, "    hb_%04x_%02x [shape=house, style=filled, "
               "fillcolor=lightgrey, label=\"host bridge\\n%04x:%02x",
               reach->hb_domain, reach->hb_bus, reach->hb_domain,
               reach->hb_bus);
        if (reach->package >= 0) {
            fprintf(out, "\\npackage %d", reach->package);
        }
        fprintf(out, "\"];\n");
    }
}

/* The edges from a device up to its host bridge; a bridge above several
 * devices has its edge up drawn once */
static void gpumem_topo_tool_dot_tree(FILE *out, const gpumem_topo_t *topo,
                                      unsigned dev)
{
    const gpumem_topo_reach_t *reach = &topo->devs[dev].reach;
    unsigned hop;

    for (hop = 0; hop <= reach->path_len; ++hop) {
        if ((hop > 0) && gpumem_topo_tool_dot_drawn(topo, dev, hop - 1, 0)) {
            return;
        }
        fprintf(out, "    ");
        if (hop == reach->path_len) {
            fprintf(out, "hb_%04x_%02x", reach->hb_domain, reach->hb_bus);
        } else {
            gpumem_topo_tool_dot_id(out, &reach->path[hop].addr);
        }
        fprintf(out, " -> ");
        gpumem_topo_tool_dot_id(out, (hop == 0) ? &reach->addr :
                                &reach->path[hop - 1].addr);
        fprintf(out, ";\n");
    }
}

/* Whether only facts that cannot be read make the verdict "no" */
static int gpumem_topo_tool_dot_unknown(const gpumem_topo_verdict_t *verdict)
{
    return !verdict->reaches &&
           (strncmp(verdict->brief, GPUMEM_TOPO_TOOL_ASSUMPTION,
                    strlen(GPUMEM_TOPO_TOOL_ASSUMPTION)) == 0);
}

/* How a pair's edge looks: green over a fabric, blue over PCI, orange where
 * only unknown facts leave both ways "no", red where a rule refuses */
static const char *
gpumem_topo_tool_dot_style(const gpumem_topo_verdict_t *ab,
                           const gpumem_topo_verdict_t *ba)
{
    const gpumem_topo_verdict_t *way = ab->reaches ? ab : ba;

    if (ab->reaches || ba->reaches) {
        return (gpumem_topo_tool_fabric(way) != NULL) ?
               "color=darkgreen, penwidth=2" : "color=blue, penwidth=1.5";
    }
    if (gpumem_topo_tool_dot_unknown(ab) && gpumem_topo_tool_dot_unknown(ba)) {
        return "color=orange, style=dashed";
    }
    return "color=red, style=dotted";
}

/* The number of a refusal's brief in the legend, counting from 1; adds it
 * to @a briefs (of @a count_p) if it is new */
static unsigned gpumem_topo_tool_dot_brief(const char **briefs,
                                           unsigned *count_p,
                                           const char *brief)
{
    unsigned i;

    for (i = 0; i < *count_p; ++i) {
        if (strcmp(briefs[i], brief) == 0) {
            return i + 1;
        }
    }
    briefs[(*count_p)++] = brief;
    return *count_p;
}

static void gpumem_topo_tool_dot_way(FILE *out, const gpumem_topo_t *topo,
                                     unsigned a, unsigned b,
                                     const gpumem_topo_verdict_t *verdict)
{
    fprintf(out, "%s -> %s: %s: ", topo->devs[a].name, topo->devs[b].name,
            verdict->reaches ? "yes" : "no");
    gpumem_topo_tool_dot_text(out, verdict->brief);
}

/*
 * One edge per pair of GPUs, coloured by verdict, with both ways' deciding
 * reasons as its tooltip (an SVG viewer shows it on hover) and, where
 * neither way reaches, the number of its reason in the legend. Returns the
 * number of briefs in @a briefs.
 */
static unsigned
gpumem_topo_tool_dot_p2p(FILE *out, const gpumem_topo_tool_report_t *report,
                         const char **briefs)
{
    const gpumem_topo_t *topo = report->topo;
    unsigned count            = 0;
    const gpumem_topo_verdict_t *ab, *ba;
    unsigned a, b, na, nb;

    for (a = 0; a < topo->num_gpus; ++a) {
        for (b = a + 1; b < topo->num_gpus; ++b) {
            ab = gpumem_topo_tool_verdict(report, a, b);
            ba = gpumem_topo_tool_verdict(report, b, a);

            fprintf(out, "    ");
            gpumem_topo_tool_dot_id(out, &topo->devs[ba->reaches &&
                                                     !ab->reaches ? b : a]
                                                .reach.addr);
            fprintf(out, " -> ");
            gpumem_topo_tool_dot_id(out, &topo->devs[ba->reaches &&
                                                     !ab->reaches ? a : b]
                                                .reach.addr);
            /* P2P edges must not pull the PCI tree's layout about */
            fprintf(out, " [constraint=false, dir=%s, %s, tooltip=\"",
                    (ab->reaches && ba->reaches) ? "both" :
                    (ab->reaches || ba->reaches) ? "forward" : "none",
                    gpumem_topo_tool_dot_style(ab, ba));
            gpumem_topo_tool_dot_way(out, topo, a, b, ab);
            fprintf(out, "&#10;");
            gpumem_topo_tool_dot_way(out, topo, b, a, ba);
            fprintf(out, "\"");

            if (!ab->reaches && !ba->reaches) {
                na = gpumem_topo_tool_dot_brief(briefs, &count, ab->brief);
                nb = gpumem_topo_tool_dot_brief(briefs, &count, ba->brief);
                fprintf(out, (na == nb) ? ", label=\"%u\"" :
                             ", label=\"%u,%u\"", na, nb);
                fprintf(out, ", fontcolor=red");
            }
            fprintf(out, "];\n");
        }
    }
    return count;
}

/* The colours, and each refusal's number with its reason */
static void gpumem_topo_tool_dot_legend(FILE *out, const char **briefs,
                                        unsigned count)
{
    unsigned i;

    fprintf(out, "    legend [shape=note, fontsize=9, labeljust=l, label=\""
            "GPU pairs (A -> B: A maps B's memory)\\l"
            "green: joined by a fabric\\l"
            "blue: over PCI\\l"
            "red, dotted: neither way, a rule refuses\\l"
            "orange, dashed: neither way, facts unknown\\l");
    for (i = 0; i < count; ++i) {
        fprintf(out, "%u: ", i + 1);
        gpumem_topo_tool_dot_text(out, briefs[i]);
        fprintf(out, "\\l");
    }
    fprintf(out, "\"];\n");
}
void gpumem_topo_tool_dot(const gpumem_topo_tool_report_t *report, FILE *out)
{
    const gpumem_topo_t *topo = report->topo;
    const char **briefs;
    unsigned dev, count;

    /* At most two briefs for each pair */
    briefs = calloc(((size_t)topo->num_gpus * topo->num_gpus) + 1,
                    sizeof(*briefs));
    if (briefs == NULL) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": no memory for the legend "
                "of %u GPUs\n", topo->num_gpus);
        return;
    }

    fprintf(out, "digraph gpumem_topo {\n"
            "    rankdir=TB;\n"
            "    node [fontname=\"Helvetica\", fontsize=10];\n"
            "    edge [arrowsize=0.6, fontname=\"Helvetica\", fontsize=9];\n"
            "    /* The PCI tree: host bridges, bridges, GPUs and NICs */\n");
    for (dev = 0; dev < topo->num_devs; ++dev) {
        gpumem_topo_tool_dot_dev(out, topo, dev);
    }
    for (dev = 0; dev < topo->num_devs; ++dev) {
        gpumem_topo_tool_dot_tree(out, topo, dev);
    }
    fprintf(out, "    /* GPU pairs, coloured by verdict */\n");
    count = gpumem_topo_tool_dot_p2p(out, report, briefs);
    gpumem_topo_tool_dot_legend(out, briefs, count);
    fprintf(out, "}\n");
    free(briefs);
}

int gpumem_topo_tool_svg(const gpumem_topo_tool_report_t *report,
                         const char *path)
{
    const char *argv[] = {"dot", "-Tsvg", "-o", path, NULL};
    posix_spawn_file_actions_t actions;
    int fds[2], status, ret;
    void (*old_pipe)(int);
    FILE *out;
    pid_t pid;

    if (pipe(fds) != 0) {
        perror(GPUMEM_TOPO_TOOL_NAME ": cannot make a pipe to dot");
        return GPUMEM_TOPO_TOOL_EXIT_FAIL;
    }

    /* dot(1) reads the graph on its standard input; the path goes to it as
     * one argument, through no shell */
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    ret = posix_spawnp(&pid, "dot", &actions, NULL, (char**)argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[0]);
    if (ret != 0) {
        close(fds[1]);
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": cannot run dot (Graphviz: "
                "install the graphviz package): %s\n", strerror(ret));
        return GPUMEM_TOPO_TOOL_EXIT_FAIL;
    }

    out = fdopen(fds[1], "w");
    if (out == NULL) {
        perror(GPUMEM_TOPO_TOOL_NAME ": cannot write to dot");
        close(fds[1]);
    } else {
        /* A dot that exits early must not take the tool with it: its exit
         * status says what went wrong */
        old_pipe = signal(SIGPIPE, SIG_IGN);
        gpumem_topo_tool_dot(report, out);
        if ((fclose(out) != 0) && (errno != EPIPE)) {
            perror(GPUMEM_TOPO_TOOL_NAME ": cannot write to dot");
        }
        signal(SIGPIPE, old_pipe);
    }

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror(GPUMEM_TOPO_TOOL_NAME ": cannot wait for dot");
            return GPUMEM_TOPO_TOOL_EXIT_FAIL;
        }
    }
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0) || (out == NULL)) {
        fprintf(stderr, GPUMEM_TOPO_TOOL_NAME ": dot could not draw %s "
                "(exit status %d)\n", path,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return GPUMEM_TOPO_TOOL_EXIT_FAIL;
    }
    return 0;
}
