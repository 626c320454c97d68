package placement

import (
	"cmp"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// ShareAssoc is one association of the fair-share tree as sshare shows
// it: an account (User empty) or a user in an account.
type ShareAssoc struct {
	Account, User string
	// RawShares are the shares the policy gives it (1 where it lists
	// none); NormShares its share S of the cluster (for a user, its
	// account's share times its share within the account).
	RawShares  int64
	NormShares float64
	// RawUsage is its decayed usage in GPU-seconds; EffectvUsage U, that
	// over everyone's.
	RawUsage, EffectvUsage float64
	// FairShare is F = 2^(-U/S), the factor its jobs get.
	FairShare float64
}

// FairShareTree is the fair-share standing of every association at now,
// computed as Priorities computes the fair-share factor (the same
// function, so sshare shows what orders the queue): the policy's accounts
// and users, and those the jobs name. Each account comes before its users;
// accounts and users are sorted by name. FairShareTree is pure.
func FairShareTree(p cluster.Policy, jobs []*cluster.Job, now time.Time) []ShareAssoc {
	t := fairShares(&p, nil, jobs, now)
	var out []ShareAssoc
	for account, users := range t.accounts {
		shares := int64(1)
		if i, ok := findAccount(p.Accounts, account); ok {
			shares = p.Accounts[i].Shares
		}
		acct := ShareAssoc{Account: account, RawShares: shares}
		if t.sumAccounts > 0 {
			acct.NormShares = float64(shares) / t.sumAccounts
		}
		for user, as := range users {
			acct.RawUsage += as.usage
			us := ShareAssoc{Account: account, User: user, RawShares: 1, NormShares: as.share,
				RawUsage: as.usage, FairShare: as.factor}
			if i, ok := findAccount(p.Accounts, account); ok {
				if k, ok := findUser(p.Accounts[i].Users, user); ok {
					us.RawShares = p.Accounts[i].Users[k].Shares
				}
			}
			if t.total > 0 {
				us.EffectvUsage = as.usage / t.total
			}
			out = append(out, us)
		}
		if t.total > 0 {
			acct.EffectvUsage = acct.RawUsage / t.total
		}
		acct.FairShare = shareFactor(acct.RawUsage, t.total, acct.NormShares)
		out = append(out, acct)
	}
	slices.SortFunc(out, func(a, b ShareAssoc) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.User, b.User))
	})
	return out
}
