(function(){
  var form=document.getElementById('filters'); form.hidden=false;
  var rows=[].slice.call(document.querySelectorAll('tbody tr.check'));
  var groups=[].slice.call(document.querySelectorAll('tbody tr.group'));
  function apply(){
    var want={}; [].forEach.call(form.elements,function(e){ if(e.name) want[e.name]=e.value; });
    rows.forEach(function(tr){
      var ok=['role','profile','level'].every(function(k){return !want[k]||tr.dataset[k]===want[k];});
      if(ok&&want.outcome){ ok=tr.dataset.outcomes.split(' ').indexOf(want.outcome)>=0; }
      tr.hidden=!ok;
    });
    groups.forEach(function(g){
      g.hidden=!rows.some(function(tr){return !tr.hidden&&tr.dataset.profile===g.dataset.profile;});
    });
    document.querySelectorAll('tr.summary td').forEach(function(td){
      var col=td.dataset.col, n={};
      rows.forEach(function(tr){ if(tr.hidden) return;
        var c=tr.querySelector('td[data-col="'+col+'"]'); var o=c&&c.dataset.outcome;
        if(o) n[o]=(n[o]||0)+1; });
      td.querySelectorAll('[data-count]').forEach(function(s){
        var k=s.dataset.count; s.querySelector('b').textContent=n[k]||0; s.hidden=!n[k]; });
    });
  }
  form.addEventListener('change',apply); apply();
})();
