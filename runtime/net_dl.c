/* net_dl.c — net.h's calls for the sandlot binary, from sandlot-net.so on first use
 * (libnl-route and libnftables stay unloaded for sandboxes without a network). */
#include "dl.h"
#include "net.h"

#define NET_FN(name) sl_module_symbol("sandlot-net.so", "SANDLOT_NET_SO", #name, err)

int net_subnet(const sl_config *cfg, sl_cidr *subnet, sl_err *err)
{
	int (*fn)(const sl_config *, sl_cidr *, sl_err *) = NET_FN(net_subnet);
	return fn ? fn(cfg, subnet, err) : -1;
}

int net_attach(const sl_config *cfg, const sl_net_sandbox *ns, int netns, bool prepared,
	       sl_err *err)
{
	int (*fn)(const sl_config *, const sl_net_sandbox *, int, bool, sl_err *) =
	    NET_FN(net_attach);
	return fn ? fn(cfg, ns, netns, prepared, err) : -1;
}

int net_prepare(const sl_config *cfg, const sl_net_sandbox *ns, int netns, sl_err *err)
{
	int (*fn)(const sl_config *, const sl_net_sandbox *, int, sl_err *) = NET_FN(net_prepare);
	return fn ? fn(cfg, ns, netns, err) : -1;
}

void net_unprepare(uint32_t addr)
{
	sl_err e = {0}, *err = &e;
	void (*fn)(uint32_t) = NET_FN(net_unprepare);
	if (fn)
		fn(addr);
}

int net_set_rules(const sl_config *cfg, const sl_net_sandbox *ns, sl_err *err)
{
	int (*fn)(const sl_config *, const sl_net_sandbox *, sl_err *) = NET_FN(net_set_rules);
	return fn ? fn(cfg, ns, err) : -1;
}

int net_names_admit(const sl_config *cfg, const char *id, const uint32_t *addrs,
		    const uint32_t *ttls, size_t n, sl_err *err)
{
	int (*fn)(const sl_config *, const char *, const uint32_t *, const uint32_t *, size_t,
		  sl_err *) = NET_FN(net_names_admit);
	return fn ? fn(cfg, id, addrs, ttls, n, err) : -1;
}

int net_detach(const sl_config *cfg, const char *id, uint32_t addr, bool names, bool keep_host,
	       sl_err *err)
{
	int (*fn)(const sl_config *, const char *, uint32_t, bool, bool, sl_err *) =
	    NET_FN(net_detach);
	return fn ? fn(cfg, id, addr, names, keep_host, err) : -1;
}

int net_down_if_idle(const sl_config *cfg, sl_err *err)
{
	int (*fn)(const sl_config *, sl_err *) = NET_FN(net_down_if_idle);
	return fn ? fn(cfg, err) : -1;
}
