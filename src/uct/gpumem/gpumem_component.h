/**
 * gpumem: registration of the plugin's components with UCT.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_GPUMEM_COMPONENT_H_
#define UCT_GPUMEM_COMPONENT_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/**
 * Register every gpumem component, then its transports, with UCT, after the
 * ABI guard agrees.
 * Called when the plugin is loaded; a second call does nothing.
 *
 * @return UCS_OK when the components are registered.
 */
ucs_status_t uct_gpumem_components_register(void);


/**
 * Remove the gpumem transports, then components, from UCT (components and
 * transports lists, configuration list). Called when the plugin is unloaded;
 * does nothing when they are not registered.
 */
void uct_gpumem_components_unregister(void);

END_C_DECLS

#endif
