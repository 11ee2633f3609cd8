//! Child agents and the process state they share, through the public library API and the real
//! binary: two `Services` side by side, the child API's terminal results, and `delegate_task`.

use std::sync::Arc;
use std::time::Duration;

use hermes::agent::Services;
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::sessions::SessionStore;

fn services_in(home: &std::path::Path) -> Arc<Services> {
    let config = Config::defaults(HermesHome::new(home), EnvVars::default());
    let store = SessionStore::open(&home.join("state.db")).unwrap();
    Arc::new(Services::new(Arc::new(config), Arc::new(store)))
}

fn write_skill(home: &std::path::Path, name: &str) {
    let dir = home.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: the {name} skill\n---\nbody\n"),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_side_by_side_do_not_interfere() {
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(home_a.path(), "alpha");
    write_skill(home_b.path(), "beta");
    std::fs::write(
        home_a.path().join("auth.json"),
        r#"{"credential_pool":{"custom":[{"access_token":"k-a","label":"a"}]}}"#,
    )
    .unwrap();
    let (a, b) = (services_in(home_a.path()), services_in(home_b.path()));

    // Skill stores (and their parse caches) are per Services.
    let names = |s: &Services| -> Vec<String> {
        s.skills
            .scan()
            .skills
            .iter()
            .map(|s| s.name.clone())
            .collect()
    };
    assert_eq!(names(&a), ["alpha"]);
    assert_eq!(names(&b), ["beta"]);
    // Changing a skill in one home is seen by that store only (cache keyed per store).
    write_skill(home_a.path(), "gamma");
    assert_eq!(names(&a), ["alpha", "gamma"]);
    assert_eq!(names(&b), ["beta"]);

    // auth.json is read per Services, once while it does not change.
    for _ in 0..3 {
        assert!(a.credentials.document().unwrap()["credential_pool"]["custom"].is_array());
        assert!(b.credentials.document().unwrap()["credential_pool"].is_null());
    }
    assert_eq!(a.credentials.reads(), 1);
    assert_eq!(b.credentials.reads(), 0);

    // A full review line in one process state leaves the other's free.
    let held: Vec<_> = std::iter::from_fn(|| a.reviews.admit()).collect();
    assert_eq!(held.len(), 8);
    assert!(a.reviews.admit().is_none());
    assert!(b.reviews.admit().is_some());
    drop(held);
    assert!(a.reviews.admit().is_some());

    // Each has its own tool registry and running-children set.
    assert!(a.tools.get("read_file").is_some() && b.tools.get("read_file").is_some());
    assert_eq!(a.children.running() + b.children.running(), 0);
    assert_eq!(a.children.wait_idle(Duration::from_millis(5)).await, 0);
}
